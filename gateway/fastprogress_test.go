package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// tickCall is a call of tick (through prefix) with id and progress
// token, its progress messages saying label; with meet, the server
// answers it only once another call with meet has come.
func tickCall(id, prefix, token, label string, meet bool) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"%stick","arguments":{"label":%q,"meet":%v},"_meta":{"progressToken":%s}}}`,
		id, prefix, label, meet, token)
}

// sumUp sums up one message a client was sent: "progress TOKEN N/TOTAL
// MESSAGE", "result ID TEXT", or the message itself.
func sumUp(t *testing.T, data string) string {
	t.Helper()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			Progress      float64         `json:"progress"`
			Total         float64         `json:"total"`
			Message       string          `json:"message"`
		} `json:"params"`
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(data), &msg), data)
	switch {
	case msg.Method == "notifications/progress":
		p := msg.Params
		return fmt.Sprintf("progress %s %v/%v %s", p.ProgressToken, p.Progress, p.Total, p.Message)
	case msg.Result != nil && len(msg.Result.Content) == 1:
		return fmt.Sprintf("result %s %s", msg.ID, msg.Result.Content[0].Text)
	}
	return data
}

// heardOnStream sums up each message of an event-stream response body
// (or the body itself, a JSON answer).
func heardOnStream(t *testing.T, body string) []string {
	t.Helper()
	var got []string
	for line := range strings.Lines(body) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			got = append(got, sumUp(t, data))
		}
	}
	if got == nil {
		got = append(got, sumUp(t, body))
	}
	return got
}

// ticked is what a client hears of a tick call with id under token,
// labelled label: its three reports in order under its own token, then
// the result.
func ticked(id, token, label string) []string {
	return []string{
		fmt.Sprintf("progress %s 1/3 %s", token, label),
		fmt.Sprintf("progress %s 2/3 %s", token, label),
		fmt.Sprintf("progress %s 3/3 %s", token, label),
		fmt.Sprintf("result %q ticked", id),
	}
}

// A call that wants progress gets the server's on its response, under
// its own token, in order, before the result, on either endpoint, from a
// stdio or a streamable HTTP server; two clients that chose the same
// token each get only their own call's progress. The fast path answers
// these calls, and a client hears the same with it off.
func TestFastPathRelaysProgress(t *testing.T) {
	t.Parallel()
	for _, upstream := range []string{"stdio", "http"} {
		for _, setting := range []string{"on", "off"} {
			t.Run(upstream+", fast path "+setting, func(t *testing.T) {
				t.Parallel()
				var r *rig
				if upstream == "http" {
					r = httpFastRig(t, setting, t.TempDir()+"/m", false)
				} else {
					r = fastRig(t, setting, t.TempDir()+"/m")
				}
				for _, ep := range []struct{ path, prefix string }{{"/servers/demo/mcp", ""}, {"/mcp", "demo__"}} {
					before := gateway.FastServed(r.gw)
					session := fastSession(t, r, ep.path)
					code, body, _ := post(t, r.base+ep.path, tickCall("one", ep.prefix, `"tok-9"`, "alone", false), session)
					require.Equal(t, http.StatusOK, code, body)
					want := requireTicked
					if upstream == "http" && setting == "off" {
						want = requireTickedButLate
					}
					want(t, ticked("one", `"tok-9"`, "alone"), heardOnStream(t, body), "%s: the response, in order", ep.path)

					// Two clients, one token, both calls in flight at once.
					var wg sync.WaitGroup
					got := make([][]string, 2)
					for i, label := range []string{"first", "second"} {
						session := fastSession(t, r, ep.path)
						wg.Go(func() {
							ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
							defer cancel()
							code, body, err := postCtx(ctx, r.base+ep.path, tickCall(label, ep.prefix, `7`, label, true), session)
							if assert.NoError(t, err) && assert.Equal(t, http.StatusOK, code, body) {
								got[i] = heardOnStream(t, body)
							}
						})
					}
					wg.Wait()
					want(t, ticked("first", "7", "first"), got[0], "%s: the first client's response", ep.path)
					want(t, ticked("second", "7", "second"), got[1], "%s: the second client's response", ep.path)

					served := gateway.FastServed(r.gw) - before
					if setting == "on" {
						require.EqualValues(t, 3, served, "%s: the fast path answered", ep.path)
					} else {
						require.Zero(t, served)
					}
				}
			})
		}
	}
}

// requireTicked requires got to be want.
func requireTicked(t *testing.T, want, got []string, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want, got, msgAndArgs...)
}

// requireTickedButLate requires got to be want but for progress that
// may be missing: the go-sdk path hands an HTTP server's progress to
// another goroutine than its result and waits 50 ms at most for what is
// still on its way, so on a loaded machine it may drop the last of it.
// What it does send is the call's own, in order, before the result.
func requireTickedButLate(t *testing.T, want, got []string, msgAndArgs ...any) {
	t.Helper()
	require.NotEmpty(t, got, msgAndArgs...)
	require.Equal(t, want[len(want)-1], got[len(got)-1], msgAndArgs...)
	rest := want[:len(want)-1]
	for _, g := range got[:len(got)-1] {
		i := slices.Index(rest, g)
		require.GreaterOrEqual(t, i, 0, "%q is not among %q, or out of order", g, rest)
		rest = rest[i+1:]
	}
}

// A call over stdio that wants progress gets the server's as lines
// before its answer, under its own token, in order; two clients of
// `serve` that chose the same token each get only their own. The fast
// path answers these calls, and a client reads the same with it off.
func TestStdioFastPathRelaysProgress(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"on", "off"} {
		t.Run("fast path "+setting, func(t *testing.T) {
			t.Parallel()
			r := fastRig(t, setting, t.TempDir()+"/m")
			for _, ep := range []struct{ server, prefix string }{{"demo", ""}, {"", "demo__"}} {
				before := gateway.FastServed(r.gw)
				c := lineStdio(t, r, ep.server, "", fastProtocol)
				c.send(t, tickCall("one", ep.prefix, `"tok"`, "alone", false))
				require.Equal(t, ticked("one", `"tok"`, "alone"), c.heardUntilAnswer(t), "%q: the lines, in order", ep.server)

				clients := []*lineClient{lineStdio(t, r, ep.server, "", fastProtocol), lineStdio(t, r, ep.server, "", fastProtocol)}
				for i, label := range []string{"first", "second"} {
					clients[i].send(t, tickCall(label, ep.prefix, `"same"`, label, true))
				}
				for i, label := range []string{"first", "second"} {
					require.Equal(t, ticked(label, `"same"`, label), clients[i].heardUntilAnswer(t), "%q: the %s client's lines", ep.server, label)
				}

				served := gateway.FastServed(r.gw) - before
				if setting == "on" {
					require.EqualValues(t, 3, served, "%q: the fast path answered", ep.server)
				} else {
					require.Zero(t, served)
				}
			}
		})
	}
}

// untilAnswer is the lines the gateway writes up to and with the next
// answer, its notifications of method included, other notifications left
// out.
func (c *lineClient) untilAnswer(t *testing.T, method string) []string {
	t.Helper()
	var got []string
	for {
		select {
		case l, ok := <-c.lines:
			require.True(t, ok, "the gateway closed its output")
			kept := strings.Contains(l, `"method":"`+method+`"`)
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","method":"notifications/`) && !kept {
				continue
			}
			got = append(got, l)
			if !kept {
				return got
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer; so far: %q", got)
		}
	}
}

// heardUntilAnswer sums up the lines the gateway writes up to and with
// the next answer, progress included, other notifications left out.
func (c *lineClient) heardUntilAnswer(t *testing.T) []string {
	t.Helper()
	lines := c.untilAnswer(t, "notifications/progress")
	for i, l := range lines {
		lines[i] = sumUp(t, l)
	}
	return lines
}
