package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// bodyAnswer is what a gateway with the fast path as setting answers a
// call on a session whose body is sent as how says, its Content-Length
// wrong; and whether the tool ran.
func bodyAnswer(t *testing.T, setting, how string) (answer string, ran bool) {
	t.Helper()
	src := &rawSource{fakeSource: newFakeSource(t)}
	src.set("srv", manager.Spec{}, "echo")
	rawRan := make(chan struct{}, 1)
	src.callRaw = func(context.Context, manager.CallOptions) (json.RawMessage, error) {
		rawRan <- struct{}{}
		return answered("raw")
	}
	g := New(Options{Source: src, FastPath: setting})
	t.Cleanup(g.Close)
	srv, err := g.Listen(HTTPOptions{Addr: "127.0.0.1:0", BodyTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	session := rawAskSession(t, ctx, "http://"+srv.Addr()+"/mcp")

	body := `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"srv__echo","arguments":{}}}`
	declared := len(body) + 10
	if how == "shorter" {
		declared = len(body) - 10
	}
	conn, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", srv.Addr(), session["Mcp-Session-Id"], declared, body)
	require.NoError(t, err)
	if how == "longer, and the client closes" {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the request is answered")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	callers, _ := src.seen()
	return fmt.Sprintf("%d %s", resp.StatusCode, b), len(callers) > 0 || len(rawRan) > 0
}

// A POST whose Content-Length is not its body's length is refused with
// 400 whether the fast path is on or off, in the same words, without
// running the tool: a body cut short by a smaller length is not a call,
// and one that never reaches its larger length (the client stops
// sending, or waits past the body timeout) is not read forever.
func TestFastPathBodyOfTheWrongLength(t *testing.T) {
	for _, how := range []string{"shorter", "longer, and the client closes", "longer, and the client waits"} {
		t.Run(how, func(t *testing.T) {
			off, ran := bodyAnswer(t, "off", how)
			require.False(t, ran, "with the fast path off, the tool ran: %s", off)
			require.True(t, strings.HasPrefix(off, "400 "), off)
			on, ran := bodyAnswer(t, "on", how)
			require.False(t, ran, "with the fast path on, the tool ran: %s", on)
			require.Equal(t, off, on)
		})
	}
}

// readBody reads a body whole whatever its request declares, and a body
// longer than declared (a handler in front may pass one on) does not make
// it read without end.
func TestReadBodyWhateverItsDeclaredLength(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	for _, declared := range []int64{-1, 0, 1, 10, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 1, maxPresized + 1} {
		t.Run(fmt.Sprint(declared), func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", iotest.HalfReader(bytes.NewReader(body)))
			r.ContentLength = declared
			got := make(chan []byte, 1)
			go func() {
				b, err := readBody(r)
				if err != nil {
					b = []byte(err.Error())
				}
				got <- b
			}()
			select {
			case b := <-got:
				require.Equal(t, string(body), string(b))
			case <-time.After(10 * time.Second):
				t.Fatal("readBody did not return")
			}
		})
	}
}
