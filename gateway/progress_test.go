package gateway

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Progress reaches the calling client under its own token, including the
// notification the manager hands over just after the call returned; none
// is lost and none comes after the result.
func TestProgressArrivingJustAfterTheAnswerIsKept(t *testing.T) {
	// In a bubble, "just after" is exactly 3 ms after the answer, whatever
	// the load on the machine.
	synctest.Test(t, progressKept)
}

func progressKept(t *testing.T) {
	src := newFakeSource(t)
	src.set("op", stdio, "run")
	g := newGateway(t, src)
	c := connect(t, g, everything, "")
	c.eventually(t, "op__run")
	for i := range 20 {
		params := &mcp.CallToolParams{Name: "op__run"}
		params.SetProgressToken(i)
		_, err := c.CallTool(context.Background(), params)
		require.NoError(t, err)
		for want := 1; want <= 2; want++ {
			select {
			case p := <-c.progress:
				require.EqualValues(t, i, p.ProgressToken, "the client's own token")
				require.EqualValues(t, want, p.Progress, "call %d", i)
			case <-time.After(10 * time.Second):
				t.Fatalf("call %d: progress %d of 2 never arrived", i, want)
			}
		}
	}
}
