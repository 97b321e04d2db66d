package oauthtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PageError is an answer a browser would show as a page instead of
// following: the authorization server's error page for a request it could
// not trust (unknown client, unregistered redirect URI), or a failure of the
// page at the end of the redirects.
type PageError struct {
	URL    string
	Status int
	Body   string // the start of it
}

func (e *PageError) Error() string {
	return fmt.Sprintf("oauthtest: %s answered %d: %s", e.URL, e.Status, strings.TrimSpace(e.Body))
}

// Consent opens authURL and stops at the authorization server's redirect
// back to the client, which it returns: the client's redirect URI with code,
// state and iss, or with error. Use it to look at the redirect, or to
// deliver it oneself.
func Consent(ctx context.Context, authURL string) (redirect string, err error) {
	resp, err := browserGet(ctx, authURL, false)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return "", pageError(authURL, resp)
	}
	return loc, nil
}

// Browse opens authURL as a browser would: it follows the redirects through
// to the client's redirect URI, typically its loopback listener, and
// succeeds if that page answers 2xx.
func Browse(ctx context.Context, authURL string) error {
	resp, err := browserGet(ctx, authURL, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return pageError(resp.Request.URL.String(), resp)
	}
	return nil
}

// browserGet fetches u, following redirects or not, through a transport of
// its own so that no connection outlives the call. It goes only to loopback
// addresses: these are tests.
func browserGet(ctx context.Context, u string, follow bool) (*http.Response, error) {
	if err := checkLoopback(u); err != nil {
		return nil, err
	}
	tr := &http.Transport{}
	c := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			switch {
			case !follow:
				return http.ErrUseLastResponse
			case len(via) >= 10:
				return errors.New("oauthtest: more than 10 redirects")
			}
			return checkLoopback(req.URL.String())
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	resp.Body = &closeTransport{ReadCloser: resp.Body, tr: tr}
	return resp, nil
}

// closeTransport closes its transport's idle connections with the body.
type closeTransport struct {
	io.ReadCloser
	tr *http.Transport
}

func (c *closeTransport) Close() error {
	err := c.ReadCloser.Close()
	c.tr.CloseIdleConnections()
	return err
}

func checkLoopback(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return err
	}
	if p.Scheme != "http" && p.Scheme != "https" || !isLoopbackIP(p.Hostname()) && p.Hostname() != "localhost" {
		return fmt.Errorf("oauthtest: refusing to open %q: not http(s) on a loopback address", u)
	}
	return nil
}

func pageError(u string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return &PageError{URL: u, Status: resp.StatusCode, Body: string(body)}
}

// BrowserScript writes an executable that does what [Browse] does with the
// URL it gets as its first argument, and returns its path: a stand-in
// browser for $BROWSER, for testing code that opens the authorization URL
// in a separate program. It uses curl, or python3 if there is no curl, and
// skips the test if there is neither. Either is told to ignore proxy
// settings and to give up after 30 seconds; the script exits non-zero if
// the last page did not answer 2xx.
func BrowserScript(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err == nil {
			return browserScript(t, tool)
		}
	}
	t.Skip("oauthtest: BrowserScript needs curl or python3")
	return ""
}

// browserScripts are the bodies of the stand-in browser, by the tool it
// uses.
var browserScripts = map[string]string{
	"curl": `exec curl --silent --show-error --fail --location --max-redirs 10 \
	--noproxy '*' --max-time 30 --output /dev/null -- "$1"
`,
	"python3": `exec python3 - "$1" <<'EOF'
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
opener.open(sys.argv[1], timeout=30).read()
EOF
`,
}

func browserScript(t testing.TB, tool string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "browser-"+tool)
	script := "#!/bin/sh\n# A stand-in browser: opens $1 and follows its redirects.\n" + browserScripts[tool]
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatalf("oauthtest: writing the browser script: %v", err)
	}
	return path
}
