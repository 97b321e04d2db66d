package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHTTPRequest: whatever body, method and headers a client sends to the
// gateway's HTTP endpoints, it gets an answer and the gateway keeps
// serving; nothing it sends can panic the host.
func FuzzHTTPRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"git__status","arguments":{"a":[1,{"b":null}]}}}`,
		`[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":7}`,
		"\x00\xff{",
	} {
		f.Add("POST", "/mcp", s, "")
		f.Add("POST", "/servers/git/mcp", s, "sess-1")
	}
	f.Add("GET", "/sse", "", "")
	f.Add("DELETE", "/toolsets/none/mcp", "", "x")
	src := newFakeSource(f)
	src.set("git", stdio, "status")
	g := New(Options{Source: src})
	f.Cleanup(g.Close)
	h := g.Handler(HTTPOptions{})
	f.Fuzz(func(t *testing.T, method, path, body, session string) {
		switch strings.ToUpper(method) {
		case "", "GET", "HEAD":
			return // a GET opens a stream that stays open: not a request/answer
		}
		if !strings.HasPrefix(path, "/") {
			return
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == 0 {
			t.Fatalf("no answer to %s %s", method, path)
		}
	})
}
