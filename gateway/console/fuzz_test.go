package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// fakeBackend is one server, "s", with one tool, "t", whose input schema
// is whatever the fuzzer makes; its calls answer "ok".
type fakeBackend struct {
	schema any
	bus    *events.Bus
}

func (b *fakeBackend) Statuses() []manager.Status { return []manager.Status{{Name: "s"}} }
func (b *fakeBackend) Status(name string) (manager.Status, error) {
	if name != "s" {
		return manager.Status{}, &manager.Error{Code: manager.CodeServerNotFound, Server: name}
	}
	return manager.Status{Name: "s", LastError: "<b>"}, nil
}
func (b *fakeBackend) Metrics(string) (manager.Metrics, error)          { return manager.Metrics{}, nil }
func (b *fakeBackend) RecentCalls(string) ([]manager.RecentCall, error) { return nil, nil }
func (b *fakeBackend) Tools(string) ([]manager.ToolInfo, error) {
	return []manager.ToolInfo{{FullName: "s.t", Server: "s", Name: "t", InputSchema: b.schema}}, nil
}
func (b *fakeBackend) StderrTail(string) (string, error) { return "", nil }
func (b *fakeBackend) Login(context.Context, string, manager.LoginOptions) error {
	return nil
}
func (b *fakeBackend) Bus() *events.Bus       { return b.bus }
func (b *fakeBackend) Reconnect(string) error { return nil }
func (b *fakeBackend) Enable(string) error    { return nil }
func (b *fakeBackend) Disable(string) error   { return nil }
func (b *fakeBackend) Call(context.Context, string, any, manager.CallOptions) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

// What visitors send (a cookie, a form) and what servers send (a tool's
// input schema) never crash the console or make it fail with a 500, and a
// made-up cookie never logs anyone in.
func FuzzConsoleInput(f *testing.F) {
	f.Add("", `{"type":"object","properties":{"a":{"type":"integer"}}}`, "arg.a=2")
	f.Add("AAAA.BBBB", `{"properties":{"x":{"type":["null","number"]},"y":{"enum":["a","b"]},"z":{}}}`, "arg.x=1e400&json.z={")
	f.Add("x.y.z", `{"properties":{"b":{"type":"boolean"},"o":{"type":"object"}}}`, "arg.b=true&json.o=[1,2]")
	f.Add("%zz", `[]`, "csrf=%ff")
	f.Add("", `{"properties":{"a":null,"b":{"type":7}},"required":"a"}`, "arg.a=")
	f.Fuzz(func(t *testing.T, cookie, schema, form string) {
		var sch any
		if json.Unmarshal([]byte(schema), &sch) != nil {
			sch = schema
		}
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		c := New(Options{Backend: &fakeBackend{schema: sch, bus: bus}, Token: "tok"})
		defer c.Close()
		for _, path := range []string{"/ui", "/ui/servers/s"} {
			r := httptest.NewRequest("GET", path, nil)
			r.Header.Set("Cookie", cookieName+"="+cookie)
			w := httptest.NewRecorder()
			c.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("GET %s with cookie %q: %d, want 401", path, cookie, w.Code)
			}
		}
		r := httptest.NewRequest("POST", "/ui/servers/s/tools/t", strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code >= 500 && w.Code != http.StatusBadGateway {
			t.Fatalf("try with schema %q and form %q: %d %s", schema, form, w.Code, w.Body)
		}
	})
}
