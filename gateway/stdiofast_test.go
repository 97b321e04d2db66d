package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// lineClient is a stdio client of a rig's gateway that writes lines of
// its own and reads the gateway's lines as they are.
type lineClient struct {
	in    *io.PipeWriter
	lines chan string
}

// lineStdio serves server or toolset (both "": everything) of r over
// stdio to a lineClient, initialized on protocol version, its tools
// listed.
func lineStdio(t *testing.T, r *rig, server, toolset, version string) *lineClient {
	t.Helper()
	c := lineStdioRaw(t, r, server, toolset)
	c.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
	require.Contains(t, c.next(t), `"protocolVersion":"`+version+`"`)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	require.Contains(t, c.next(t), `"id":"list","result":{`)
	return c
}

// lineStdioRaw serves server or toolset of r over stdio to a lineClient
// that has sent nothing yet.
func lineStdioRaw(t *testing.T, r *rig, server, toolset string) *lineClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &lineClient{in: inW, lines: make(chan string, 1000)}
	done := make(chan error, 1)
	go func() { done <- r.gw.ServeStdio(context.Background(), inR, outW, server, toolset) }()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
			require.NoError(t, err, "ServeStdio")
		}
		_ = outR.Close()
	})
	return c
}

func (c *lineClient) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(t, err)
}

// next is the next line the gateway wrote, skipping notifications.
func (c *lineClient) next(t *testing.T) string {
	t.Helper()
	for {
		select {
		case l, ok := <-c.lines:
			require.True(t, ok, "the gateway closed its output")
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","method":"notifications/`) {
				continue
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no answer")
		}
	}
}

// ask sends line and returns the next line the gateway writes.
func (c *lineClient) ask(t *testing.T, line string) string {
	t.Helper()
	c.send(t, line)
	return c.next(t)
}

// A call over stdio that the fast path answers is answered with the very
// bytes the go-sdk path writes: results, a tool's isError result,
// arguments the schema refuses, a server's JSON-RPC error, on the
// server's endpoint and on /mcp. What the fast path does not take (not an
// object of arguments, an unknown or hidden tool, other methods, lines
// that are not well-formed calls) the go-sdk answers as it
// does with the fast path off.
func TestStdioFastPathAnswersAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	on := fastRig(t, "on", t.TempDir()+"/m")
	off := fastRig(t, "off", t.TempDir()+"/m")
	type line struct {
		tool, args string
		fast       bool // the fast path answers it
	}
	lines := []line{
		{"echo", `{"text":"héllo\nworld \u2028 <&>"}`, true},
		{"add", `{"a":2,"b":40}`, true},
		{"fail", `{"message":"no luck"}`, true},
		{"echo", `{"text":5}`, true}, // refused by the schema
		{"boom", `{}`, true},
		{"echo", "\n", true}, // no arguments
		{"echo", `"not an object"`, false},
		{"nope", `{}`, false},
		{"sleep", `{"ms":1}`, false}, // hidden
	}
	for _, ep := range []struct{ server, prefix string }{{"demo", ""}, {"", "demo__"}} {
		lOn := lineStdio(t, on, ep.server, "", fastProtocol)
		lOff := lineStdio(t, off, ep.server, "", fastProtocol)
		for i, l := range lines {
			args := `,"arguments":` + l.args
			if l.args == "\n" {
				args = ""
			}
			req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q%s}}`, 100+i, ep.prefix+l.tool, args)
			before := gateway.FastServed(on.gw)
			got, want := lOn.ask(t, req), lOff.ask(t, req)
			require.Equal(t, want, got, "%q %s", ep.server, l.tool)
			served := gateway.FastServed(on.gw) - before
			if l.fast {
				require.EqualValues(t, 1, served, "%q %s: answered by the fast path", ep.server, l.tool)
			} else {
				require.Zero(t, served, "%q %s: left to the go-sdk path", ep.server, l.tool)
			}
		}
		before := gateway.FastServed(on.gw)
		for _, req := range []string{
			`{"jsonrpc":"2.0","id":"ping","method":"ping"}`,
			// Lines that name tools/call but are no call the fast path takes.
			`{"jsonrpc":"2.0","id":{"no":1},"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}}`,
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":5}`,
			`{"jsonrpc":"1.0","id":8,"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}}`,
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}`,
			`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"},"_meta":[]}}`,
			`[{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}}]`,
			`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}}{"jsonrpc":"2.0","id":13,"method":"ping"}`,
		} {
			require.Equal(t, lOff.ask(t, req), lOn.ask(t, req), req)
		}
		// A member named in another case the go-sdk does not read as that
		// member (this is no request to it): neither answers the call.
		caseLine := `{"jsonrpc":"2.0","id":14,"Method":"tools/call","params":{"name":"` + ep.prefix + `echo","arguments":{"text":"x"}}}` + "\n" + `{"jsonrpc":"2.0","id":"after case","method":"ping"}`
		require.Equal(t, lOff.ask(t, caseLine), lOn.ask(t, caseLine))
		require.Equal(t, before, gateway.FastServed(on.gw), "none of those took the fast path")
		require.Equal(t, lOff.ask(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`+"\n"+`{"jsonrpc":"2.0","id":"after","method":"ping"}`),
			lOn.ask(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`+"\n"+`{"jsonrpc":"2.0","id":"after","method":"ping"}`),
			"a cancellation of no fast call goes to the go-sdk")
	}
	require.Zero(t, gateway.FastServed(off.gw), "with the fast path off, none is")
}

// Fast calls and the go-sdk's answers share stdout: many of each in
// flight at once come out as whole lines, every request answered once.
func TestStdioFastPathLinesDoNotInterleave(t *testing.T) {
	t.Parallel()
	r := fastRig(t, "on", t.TempDir()+"/m")
	c := lineStdio(t, r, "demo", "", fastProtocol)
	const n = 40
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`+"\n", i, strings.Repeat("x", 3000+i))
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":"l%d","method":"tools/list"}`+"\n", i)
	}
	_, err := io.WriteString(c.in, batch.String())
	require.NoError(t, err)
	seen := map[string]bool{}
	for range 2 * n {
		l := c.next(t)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &msg), "a whole line: %.200s", l)
		require.NotEmpty(t, msg.Result, l)
		require.False(t, seen[string(msg.ID)], "answered twice: %s", msg.ID)
		seen[string(msg.ID)] = true
	}
	require.Len(t, seen, 2*n)
	require.EqualValues(t, n, gateway.FastServed(r.gw))
}

// A fast call over stdio that its client cancels with
// notifications/cancelled is cancelled upstream (the server is told) and
// answered; the session goes on.
func TestStdioFastPathCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	mark := t.TempDir() + "/block"
	r := fastRig(t, "on", mark)
	c := lineStdio(t, r, "demo", "", fastProtocol)
	c.send(t, `{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"block","arguments":{}}}`)
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-7","reason":"changed my mind"}}`)
	pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
	answer := c.next(t)
	require.Contains(t, answer, `"id":"c-7"`)
	require.Contains(t, answer, `"isError":true`)
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	require.Contains(t, c.ask(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"on"}}}`), `"text":"on"`)
	require.EqualValues(t, 2, gateway.FastServed(r.gw))
}

// Go-sdk clients of both generations over stdio take the fast path once
// they have listed their tools.
func TestStdioFastPathServesBothGenerations(t *testing.T) {
	t.Parallel()
	r := fastRig(t, "on", t.TempDir()+"/m")
	cs := connectOn(t, r.stdio(t, "demo"), nil, "2026-07-28")
	toolNames(t, cs)
	require.Equal(t, "new", text(call(t, cs, "echo", map[string]any{"text": "new"})))
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	old := connectOn(t, r.stdio(t, "demo"), nil, fastProtocol)
	toolNames(t, old)
	require.Equal(t, "old", text(call(t, old, "echo", map[string]any{"text": "old"})))
	require.EqualValues(t, 2, gateway.FastServed(r.gw))
}

// A toolset's endpoint over stdio is served by the fast path, as over
// HTTP; a tool the toolset leaves out is not reached through it.
func TestStdioFastPathServesToolsets(t *testing.T) {
	t.Parallel()
	r := fastRig(t, "on", t.TempDir()+"/m")
	r.gw.SetToolsets(map[string]gateway.Toolset{"echoes": {Include: []string{"demo.echo"}}})
	require.Contains(t, r.gw.Toolsets(), "echoes") // applied
	c := lineStdio(t, r, "", "echoes", fastProtocol)
	require.Contains(t, c.ask(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","arguments":{"text":"set"}}}`), `"text":"set"`)
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	require.NotContains(t, c.ask(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__add","arguments":{"a":1,"b":2}}}`), `"text":"3"`)
	require.EqualValues(t, 1, gateway.FastServed(r.gw), "a tool outside the toolset is the go-sdk path's to refuse")
}
