package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// The progress and log messages a server sends after its client answered
// a question reach a client on 2026-07-28, before the call's result, over
// stdio and over HTTP alike: without a session, each request of the call
// is a stream of its own, and what the call sends goes on the request
// that waits for it (the one that brought the answers), not on the first,
// which has ended.
func TestProgressAndLogsAfterAQuestionReachTheClient(t *testing.T) {
	for _, how := range []string{"stdio", "http 2026-07-28"} {
		t.Run(how, func(t *testing.T) {
			g, src, base := askingGateway(t)
			src.answerWith(func(ctx context.Context, _ string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
				if _, err := opts.Answerer.Elicit(ctx, ask.From{Server: "srv"}, elicitation); err != nil {
					return nil, err
				}
				opts.Progress(manager.Progress{Progress: 1, Total: 1, Message: "answered"})
				g.sendLog(notify.LogMessage{Origin: notify.Origin{Server: "srv"}, Level: "info", Data: "answered"})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
			var mu sync.Mutex
			var got []string // guarded by mu: what came, in order
			cs := dial(t, g, base, how, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, "progress "+req.Params.Message)
					mu.Unlock()
				},
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					mu.Lock()
					got = append(got, fmt.Sprint("log ", req.Params.Data))
					mu.Unlock()
				},
			})
			require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			params := &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}}
			params.SetProgressToken("p")
			params.Meta[mcp.MetaKeyLogLevel] = "info" // on 2026-07-28 each request says it
			res, err := cs.CallTool(ctx, params)
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", resultText(res))
			// The go-sdk client may hand notifications to their handlers
			// after it has returned the result they came before.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				mu.Lock()
				defer mu.Unlock()
				assert.ElementsMatch(c, []string{"progress answered", "log answered"}, got)
			}, 10*time.Second, 5*time.Millisecond, "the progress and the log message sent after the answer reach the client")
		})
	}
}
