package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
)

// A stdio fast call registered as the stdio path registers it, with a
// connection whose go-sdk side the test reads.
func trackedStdioCall(t *testing.T, buffer int) (*session, *stdioCall, *stdioConn, context.Context, json.RawMessage) {
	t.Helper()
	s := &session{}
	s.start()
	t.Cleanup(func() { s.cancel(nil) })
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	call := &stdioCall{cancel: cancel}
	id := json.RawMessage(`"c-1"`)
	t.Cleanup(s.trackFast(id, call.cancelBy, cancel))
	conn := &stdioConn{incoming: make(chan readResult, buffer), closed: make(chan struct{})}
	return s, call, conn, ctx, id
}

const stdioCallLine = `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"echo"}}`

// A cancellation that lands while the call runs on the fast path
// cancels it as the client's cancellation (not as something else
// ending it), and a call the client cancelled is not handed to the
// go-sdk afterwards, should the fast path give it up.
func TestStdioFastCallCancelledBeforeItsHandOverIsNotHandedOver(t *testing.T) {
	s, call, conn, ctx, id := trackedStdioCall(t, 1) // a call handed over wrongly is seen, not blocked on
	require.True(t, s.cancelFast(id), "the fast path serves the cancellation of its call")
	require.ErrorIs(t, context.Cause(ctx), errCallCancelled)

	call.handOver(conn, []byte(stdioCallLine))
	select {
	case r := <-conn.incoming:
		t.Fatalf("a cancelled call was handed to the go-sdk: %v", r.msg)
	default:
	}
}

// A cancellation that lands while the call is being handed to the
// go-sdk goes to the go-sdk too, after the call, so the go-sdk cancels
// the call it serves.
func TestStdioFastCallCancelledDuringItsHandOverReachesTheSDKAfterIt(t *testing.T) {
	s, call, conn, ctx, id := trackedStdioCall(t, 0) // the hand-over lasts until the go-sdk reads the call
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		call.handOver(conn, []byte(stdioCallLine))
	}()
	require.Eventually(t, func() bool {
		call.mu.Lock()
		defer call.mu.Unlock()
		return call.handing != nil
	}, 10*time.Second, time.Millisecond, "the hand-over begins")

	cancelled := make(chan bool, 1)
	go func() { cancelled <- s.cancelFast(id) }()
	r := <-conn.incoming // the go-sdk reads the call
	req, ok := r.msg.(*jsonrpc.Request)
	require.True(t, ok, "the go-sdk reads the call first")
	require.Equal(t, "tools/call", req.Method)
	require.False(t, <-cancelled, "the cancellation is the go-sdk's to serve, after the call")
	require.NoError(t, context.Cause(ctx), "the call handed over is not cancelled under the go-sdk")
	<-handed
}
