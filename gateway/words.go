package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpvisor/mcpvisor/manager"
)

// What a client reads of a failed request is written for a model and the
// person it works for: the code (CONNECTION_LIMIT, CIRCUIT_OPEN, …) so
// that an agent can tell the cases apart, the server and the operation,
// what happened, and then, in plain words, whether retrying can help and
// when. It never tells the model to run Lua or a command: the manager's
// remedy (manager.Remedy) is data, worded here for this reader.

// errorText is what a client reads of a failed request.
func errorText(err error) string {
	text := err.Error()
	var me *manager.Error
	if errors.As(err, &me) && me.Code != "" {
		text = string(me.Code) + ": " + text
	}
	if a := advice(err, time.Now()); a != "" {
		text += ". " + a
	}
	return text
}

// advice says whether retrying can help and when: from the error's
// remedy when the manager knows one, else from what kind of failure it
// is. It is "" when there is nothing a retry could change (the client
// cancelled).
func advice(err error, now time.Time) string {
	if r, ok := manager.RemedyOf(err); ok {
		if a := remedyAdvice(r, now); a != "" {
			return a
		}
	}
	var rpcErr *jsonrpc.Error
	var limit *LimitError
	switch {
	case errors.Is(err, manager.ErrCancelled):
		return ""
	case errors.Is(err, ErrShuttingDown):
		return "Retrying once mcpvisor is back may succeed."
	case errors.As(err, &limit):
		return limitAdvice(limit)
	case errors.Is(err, manager.ErrInvalidArguments):
		return "Retrying with the same arguments will not help; correct them and call again."
	case errors.Is(err, manager.ErrToolNotFound), errors.Is(err, manager.ErrPromptNotFound),
		errors.Is(err, manager.ErrServerNotFound), errors.Is(err, manager.ErrAmbiguousTool):
		return "Retrying the same name will not help; list what the server offers to find the right one."
	case errors.Is(err, manager.ErrClosed):
		return "The server is being removed; retrying will not help."
	case errors.Is(err, manager.ErrDisconnected):
		return "The request may or may not have run; retrying may succeed once the server is back, but may repeat what it did."
	case errors.Is(err, manager.ErrTimeout):
		return "Retrying may succeed if the server was only slow."
	case errors.Is(err, manager.ErrConnectionFailed), errors.Is(err, manager.ErrConnectionTimeout):
		return "Retrying in a few seconds may succeed."
	case errors.As(err, &rpcErr):
		return "The server refused the request; retrying it unchanged is unlikely to help."
	}
	return ""
}

// remedyAdvice words a remedy for a model and its user. A client cannot
// act on the server itself: what it needs done, the person running
// mcpvisor does.
func remedyAdvice(r manager.Remedy, now time.Time) string {
	switch r.Kind {
	case manager.RemedyRetry:
		return "Retrying later may succeed."
	case manager.RemedyWait:
		if d := r.At.Sub(now).Round(time.Second); d > 0 {
			return fmt.Sprintf("mcpvisor tries to connect it again by itself in %s; retrying after that may succeed.", d)
		}
		return "mcpvisor is trying to connect it again now; retrying in a few seconds may succeed."
	case manager.RemedyReconnect:
		return "mcpvisor has stopped trying to connect it; retrying will not help until the person running mcpvisor reconnects it."
	case manager.RemedyEnable:
		return "The server is turned off; retrying will not help until the person running mcpvisor turns it on."
	case manager.RemedyLogin:
		return "The server needs its user to log in to it; retrying will not help until they have: tell them."
	case manager.RemedyCredentials:
		return "The server refused the credentials mcpvisor sends; retrying will not help until the person running mcpvisor sets the ones it wants."
	case manager.RemedyFixDeclaration:
		return "The server cannot start as configured; retrying will not help until the person running mcpvisor fixes its configuration."
	}
	return ""
}

// rpcError is what a client gets for a failed request that is not a tool
// call (a prompt, a resource, a subscription): the server's own JSON-RPC
// error, its code kept (so "resource not found" stays that), else an
// internal error; the message is errorText's.
func rpcError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &jsonrpc.Error{Code: je.Code, Message: errorText(err), Data: je.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errorText(err)}
}
