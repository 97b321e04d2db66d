package gateway_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// slowly is a demo server that connects after delay (or fails then).
func slowly(delay time.Duration, fail error) *dialer {
	d := newDialer()
	d.set(delay, fail)
	return d
}

// A client that lists right after initialize is answered once every
// server has had its first say: the one that connects in 10 ms, the one
// that takes a second, and the one that fails (which it is not waited for
// again). Reading a resource and getting a prompt wait the same way.
func TestFirstAnswersWaitForEveryServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{Wait: 5 * time.Second})
		require.NoError(t, b.m.Add("quick", slowly(10*time.Millisecond, nil).spec(nil)))
		require.NoError(t, b.m.Add("slow", slowly(time.Second, nil).spec(nil)))
		require.NoError(t, b.m.Add("broken", slowly(0, errors.New("no such program")).spec(nil)))
		require.NoError(t, b.m.Add("off", manager.Spec{Transport: manager.TransportInProcess, Dial: newDialer(), Disabled: true}))

		c := b.connect("first-contact")
		names := c.tools(t)
		for _, want := range []string{"quick__echo", "quick__add", "slow__echo", "slow__add"} {
			assert.Contains(t, names, want, "the first tools/list")
		}

		c2 := b.connect("second")
		res, err := c2.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: demo.ReadmeURI})
		require.NoError(t, err, "resources/read right after initialize")
		require.NotEmpty(t, res.Contents)
		c3 := b.connect("third")
		p, err := c3.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "slow__greet", Arguments: map[string]string{"name": "x"}})
		require.NoError(t, err, "prompts/get right after initialize")
		require.NotEmpty(t, p.Messages)
	})
}

// A server that takes longer than the wait holds the first answers back
// no longer than the wait, counted from its start: a client arriving
// after that is answered at once. When the server connects, its tools are
// announced with list_changed.
func TestFirstAnswersWaitNoLongerThanTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{Wait: 5 * time.Second})
		require.NoError(t, b.m.Add("quick", slowly(0, nil).spec(nil)))
		require.NoError(t, b.m.Add("hung", slowly(30*time.Second, nil).spec(nil)))
		start := time.Now()
		c := b.connect("early")
		names := c.tools(t)
		assert.Contains(t, names, "quick__echo")
		assert.False(t, hasServer(names, "hung"))
		assert.Equal(t, 5*time.Second, time.Since(start), "the list came when the wait was over")

		time.Sleep(time.Second)
		later := b.connect("late")
		asked := time.Now()
		assert.Contains(t, later.tools(t), "quick__echo")
		assert.Zero(t, time.Since(asked), "a client arriving after the wait waits no more")

		c.told()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.True(t, c.told(), "no tools/list_changed when the late server connected")
		assert.Contains(t, c.tools(t), "hung__echo")
	})
}

// With no wait, a list is answered at once with what has connected so
// far, and the rest is announced with list_changed.
func TestNoWaitAnswersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{})
		require.NoError(t, b.m.Add("slow", slowly(time.Second, nil).spec(nil)))
		c := b.connect("impatient")
		start := time.Now()
		assert.Empty(t, c.tools(t))
		assert.Zero(t, time.Since(start))
		time.Sleep(2 * time.Second) // its connection takes one
		synctest.Wait()
		assert.True(t, c.told())
		assert.Contains(t, c.tools(t), "slow__echo")
	})
}

// A server enabled while clients are connected is waited for like one
// declared: a list asked meanwhile has its tools.
func TestEnabledServerIsWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{Wait: 5 * time.Second})
		d := slowly(time.Second, nil)
		require.NoError(t, b.m.Add("later", manager.Spec{Transport: manager.TransportInProcess, Dial: d, Disabled: true}))
		c := b.connect("patient")
		assert.Empty(t, c.tools(t), "a disabled server is not waited for")
		require.NoError(t, b.m.Enable("later"))
		synctest.Wait()
		assert.Contains(t, c.tools(t), "later__echo")
	})
}

// A server's own endpoint waits for that server alone.
func TestServerEndpointWaitsForItsServerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{Wait: 5 * time.Second})
		require.NoError(t, b.m.Add("quick", slowly(10*time.Millisecond, nil).spec(nil)))
		require.NoError(t, b.m.Add("hung", slowly(time.Hour, nil).spec(nil)))
		start := time.Now()
		c := b.connectTo("own", "quick")
		assert.Contains(t, c.tools(t), "echo")
		assert.Equal(t, 10*time.Millisecond, time.Since(start), "it waited for its server, and no other")
	})
}
