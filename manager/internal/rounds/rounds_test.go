package rounds_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager/internal/rounds"
)

// asked is a first round's answer that asks for a name.
const asked = `{"resultType":"input_required","requestState":"s1","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`

// answering is a client that answers every form with the name "Ada".
func answering() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
}

// The round the server answered is not sent again: the client answers
// its question, and the next round, sent once, carries the answer, the
// request state, the call and what the go-sdk adds to a request of the
// protocol; its result ends the call.
func TestContinueSendsOnlyTheLaterRounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sent []json.RawMessage
	res, err := rounds.Continue(ctx, answering(), "2026-07-28",
		&mcp.CallToolParams{Name: "greet", Arguments: json.RawMessage(`{"a":1}`), Meta: mcp.Meta{"k": json.RawMessage(`"v"`)}},
		json.RawMessage(asked), func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
			sent = append(sent, params)
			return json.RawMessage(`{"content":[{"type":"text","text":"hi Ada"}]}`), nil
		})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	require.Equal(t, "hi Ada", res.Content[0].(*mcp.TextContent).Text)
	require.Len(t, sent, 1)
	var p struct {
		Name           string
		Arguments      map[string]any
		Meta           map[string]any `json:"_meta"`
		InputResponses map[string]map[string]any
		RequestState   string
	}
	require.NoError(t, json.Unmarshal(sent[0], &p))
	require.Equal(t, "greet", p.Name)
	require.Equal(t, map[string]any{"a": float64(1)}, p.Arguments)
	require.Equal(t, "s1", p.RequestState)
	require.Equal(t, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, p.InputResponses["q"])
	require.Equal(t, "v", p.Meta["k"])
	require.Equal(t, "2026-07-28", p.Meta[mcp.MetaKeyProtocolVersion])
}

// A later round the server answers with an error ends the call with it,
// as the go-sdk words it; a failure of send that is not the server's
// answer is returned as it is.
func TestContinueFailsAsTheLaterRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "greet"}
	_, err := rounds.Continue(ctx, answering(), "2026-07-28", params, json.RawMessage(asked), func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &jsonrpc.Error{Code: -32001, Message: "no greeting today"}
	})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.EqualValues(t, -32001, rpcErr.Code)

	broken := errors.New("the stream ended")
	_, err = rounds.Continue(ctx, answering(), "2026-07-28", params, json.RawMessage(asked), func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, broken
	})
	require.ErrorIs(t, err, broken)
}
