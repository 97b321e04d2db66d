package endpoint

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The SDK sees the endpoint without secrets (its errors quote the URL, and
// end up in logs), the server gets them; requests without a deadline get
// the header timeout, requests with one get their deadline; all end with
// the connection.
func TestEndpointTransport(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-release:
				return
			}
		}
		u, p, _ := r.BasicAuth()
		w.Write([]byte(u + ":" + p + "?" + r.URL.RawQuery))
	}))
	defer srv.Close()
	defer close(release)

	life, end := context.WithCancel(context.Background())
	defer end()
	cfg := Config{
		URL:           strings.Replace(srv.URL, "http://", "http://me:pw@", 1) + "/mcp?token=t",
		HeaderTimeout: 100 * time.Millisecond,
	}
	pool := &http.Transport{}
	defer pool.CloseIdleConnections()
	tr, endpoint := newTransport(life, pool, cfg)
	if endpoint != srv.URL+"/mcp" {
		t.Errorf("the SDK's endpoint is %q", endpoint)
	}
	client := &http.Client{Transport: tr}
	get := func(ctx context.Context, url string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	if got, err := get(context.Background(), endpoint); err != nil || got != "me:pw?token=t" {
		t.Errorf("endpoint: %q, %v; want the credentials and query back", got, err)
	}
	if got, err := get(context.Background(), endpoint+"?sessionid=1"); err != nil || got != "me:pw?sessionid=1" {
		t.Errorf("session URL: %q, %v; want its own query", got, err)
	}

	_, err := get(context.Background(), srv.URL+"/slow")
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "no response headers within 100ms") {
		t.Errorf("no deadline: %v, want the header timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := get(ctx, srv.URL+"/slow"); err != nil {
		t.Errorf("with a deadline of its own: %v", err)
	}

	end()
	if _, err := get(ctx, endpoint); !errors.Is(err, errConnectionDone) {
		t.Errorf("after the connection ended: %v", err)
	}
}

// stalled is a RoundTripper whose server never sends headers: it returns
// only when the request's context ends.
type stalled struct{}

func (stalled) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, context.Cause(r.Context())
}

// A request without a deadline fails exactly when the header timeout runs
// out; one with a deadline of its own waits for that instead.
func TestHeaderTimeoutFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, endpoint := newTransport(t.Context(), stalled{}, Config{URL: "http://host/mcp", HeaderTimeout: 100 * time.Millisecond})
		client := &http.Client{Transport: tr}

		start := time.Now()
		_, err := client.Get(endpoint)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("no deadline: %v, want the header timeout", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("the header timeout fired after %v, want exactly 100ms", took)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		start = time.Now()
		_, err = client.Do(req)
		if errors.Is(err, ErrTimeout) {
			t.Errorf("a request with its own deadline got the header timeout: %v", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("a request with a 5s deadline ended after %v", took)
		}
	})
}
