package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const (
	socketPrefix = "mcpvisor-"
	socketSuffix = ".sock"
)

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// Dir is where the current user's instances keep their sockets:
// $XDG_RUNTIME_DIR/mcpvisor, else stateDir (the caller's state directory).
func Dir(stateDir string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && runtime.GOOS != "windows" {
		return filepath.Join(d, "mcpvisor")
	}
	return filepath.Join(stateDir, "run")
}

// Instances lists the sockets in dir whose instance answers, and removes
// those left by instances that are gone.
func Instances(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, socketPrefix+"*"+socketSuffix))
	var live []string
	for _, p := range paths {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(p) // its instance is gone
			}
			continue
		}
		c.Close()
		live = append(live, p)
	}
	return live
}

// Client talks to one instance.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Socket is a Client of the instance listening on the socket at path.
func Socket(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{base: "http://mcpvisor", http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// Remote is a Client of the gateway at addr (host:port or a URL), sending
// token when it is not empty.
func Remote(addr, token string) (*Client, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--addr wants the gateway's address, like 127.0.0.1:8931; got %q", addr)
	}
	return &Client{base: u.Scheme + "://" + u.Host, token: token, http: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Snapshot asks the instance for its status.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	resp, err := c.do(ctx, http.MethodGet, "/control/v1/status")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&s); err != nil {
		return s, fmt.Errorf("read the status: %w", err)
	}
	return s, nil
}

// Act asks the instance to do action to the server name.
func (c *Client) Act(ctx context.Context, name string, action Action) error {
	resp, err := c.do(ctx, http.MethodPost, "/control/v1/servers/"+url.PathEscape(name)+"/"+string(action))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (c *Client) do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		text := strings.TrimSpace(string(msg))
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			text = "the gateway wants its token: set MCPVISOR_TOKEN"
		case http.StatusNotFound:
			if text == "" || strings.HasPrefix(text, "404") {
				text = "this mcpvisor has no control API (an older version?)"
			}
		}
		return nil, fmt.Errorf("%s", text)
	}
	return resp, nil
}
