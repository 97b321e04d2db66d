package rounds

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Send sends a later round of the call to the server, its params as the
// go-sdk encoded them, and returns the server's result raw. An error the
// server answered with is a *jsonrpc.Error; any other error is the
// call's (Continue returns it).
type Send func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Continue calls the tool params names on a session of client over
// protocol version, whose first round the server has already answered
// with first (an input required result), and returns the result the
// go-sdk's client ends the call with: the input requests answered by the
// client's handlers, each later round sent with send. The go-sdk adds to
// params what it adds to any call of that protocol (its _meta members of
// the client's identity) where params does not have them.
func Continue(ctx context.Context, client *mcp.Client, version string, params *mcp.CallToolParams, first json.RawMessage, send Send) (*mcp.CallToolResult, error) {
	ct, st := mcp.NewInMemoryTransports()
	sc, err := st.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r := &responder{conn: sc, version: version, first: first, send: send}
	served := make(chan struct{})
	go func() {
		defer close(served)
		r.serve(ctx)
	}()
	var res *mcp.CallToolResult
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		res, err = cs.CallTool(ctx, params)
		_ = cs.Close()
	}
	_ = sc.Close()
	<-served
	r.rounds.Wait()
	if err != nil {
		if failed := r.failure(); failed != nil {
			return nil, failed
		}
		return nil, err
	}
	return res, nil
}

// responder is the server side of Continue's session.
type responder struct {
	conn    mcp.Connection
	version string
	first   json.RawMessage
	send    Send
	rounds  sync.WaitGroup // the rounds being forwarded
	sent    bool           // the first round was answered; owned by serve

	mu     sync.Mutex
	failed error // guarded by mu: the first error of send that is not the server's answer
}

// serve answers the session's requests until its connection closes.
func (r *responder) serve(ctx context.Context) {
	for {
		msg, err := r.conn.Read(context.Background())
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue // notifications (a cancellation, roots changed) concern the server's session, not this one
		}
		switch req.Method {
		case "server/discover":
			res, err := json.Marshal(&mcp.DiscoverResult{SupportedVersions: []string{r.version}, Capabilities: &mcp.ServerCapabilities{}})
			r.reply(req.ID, res, err)
		case "tools/call":
			if !r.sent {
				r.sent = true
				r.reply(req.ID, r.first, nil)
				continue
			}
			r.rounds.Go(func() {
				res, err := r.send(ctx, req.Params)
				var rpcErr *jsonrpc.Error
				if err != nil && !errors.As(err, &rpcErr) {
					r.fail(err)
				}
				r.reply(req.ID, res, err)
			})
		default:
			r.reply(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"})
		}
	}
}

// reply answers the request with id.
func (r *responder) reply(id jsonrpc.ID, res json.RawMessage, err error) {
	var rpcErr *jsonrpc.Error
	if err != nil && !errors.As(err, &rpcErr) {
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	msg := &jsonrpc.Response{ID: id, Result: res}
	if rpcErr != nil {
		msg = &jsonrpc.Response{ID: id, Error: rpcErr}
	}
	_ = r.conn.Write(context.Background(), msg) // fails only once the session is closed
}

func (r *responder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = err
	}
}

func (r *responder) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
