package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/rawhttp"
	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// Method is the request a probe sends.
const Method = "server/discover"

// Params are the params of a server/discover on protocol from client: the
// per-request _meta of the sessionless generation (its protocol version,
// the client's identity and capabilities). A probe declares no
// capabilities: it asks nothing of the client.
func Params(protocol string, client *mcp.Implementation) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    protocol,
		mcp.MetaKeyClientInfo:         client,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}})
}

// Stdio sends server/discover with params through raw, a stdio server's
// raw call channel, and waits for the answer.
func Stdio(ctx context.Context, raw *rawrpc.Conn, params json.RawMessage) error {
	_, err := raw.Call(ctx, Method, params, "the health check gave up waiting")
	return asJSONRPC(err)
}

// asJSONRPC returns a server's error answer as the SDK does, a
// *jsonrpc.Error, and any other error as it is.
func asJSONRPC(err error) error {
	var rpcErr *rawrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	return err
}

// HTTP is where a streamable HTTP server is probed.
type HTTP struct {
	Client   *http.Client // the connection's own (its headers, its login)
	URL      string       // the endpoint
	Session  string       // Mcp-Session-Id, if the server gave one
	Protocol string       // the negotiated protocol version
	// MaxRetries bounds the resumption of a cut answer stream, as the
	// connection's go-sdk transport's field of that name does.
	MaxRetries int
}

// maxEvent bounds one event of an answer's stream.
const maxEvent = 4 << 20

// Discover POSTs server/discover with params and waits for the answer,
// as a JSON body or on the event stream the server opens for it (what
// else the server sends there is passed over: a probe asks nothing and
// reports nothing).
func (h HTTP) Discover(ctx context.Context, params json.RawMessage) error {
	s := rawhttp.Session{Client: h.Client, URL: h.URL, ID: h.Session, Protocol: h.Protocol, MaxEvent: maxEvent, MaxRetries: h.MaxRetries}
	res, err := s.Call(ctx, Method, params, "the health check gave up waiting", passOver{})
	if err != nil {
		return asJSONRPC(err)
	}
	if len(res) == 0 || res[0] != '{' {
		return errors.New("the answer to server/discover has no result object")
	}
	return nil
}

// passOver takes what a server sends on a probe's stream besides the
// answer, and does nothing with it.
type passOver struct{}

func (passOver) Notify(string, json.RawMessage) {}

func (passOver) Ask(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "a health check answers nothing"}
}
