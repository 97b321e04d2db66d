package gateway

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrShuttingDown refuses what a client asks once the gateway has begun
// to shut down (Shutdown), and ends the calls still in flight when its
// grace is over.
var ErrShuttingDown = errors.New("mcpvisor is shutting down")

// CodeRefused is the JSON-RPC error code of a request the gateway refuses
// for a limit or its shutdown (in the range JSON-RPC leaves to servers).
const CodeRefused int64 = -32000

// Limit names one of the gateway's bounds on its clients.
type Limit int

const (
	// SessionLimit is Options.MaxSessions: client sessions open at once.
	SessionLimit Limit = iota + 1
	// CallLimit is Options.MaxClientCalls: requests one client session
	// has in flight upstream at once.
	CallLimit
)

// LimitError is a request refused because a client, or all of them,
// reached a limit. Nothing already open or in flight is ended to make
// room.
type LimitError struct {
	Limit Limit
	Max   int
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case SessionLimit:
		return fmt.Sprintf("mcpvisor already has %d client sessions open, the most it serves at once "+
			"(set by the person running it, --max-sessions); an open session is never closed to make room", e.Max)
	case CallLimit:
		return fmt.Sprintf("this client already has %d requests in flight, the most one client may have "+
			"(set by the person running mcpvisor, --max-client-calls)", e.Max)
	}
	return fmt.Sprintf("limit %d reached (%d)", e.Limit, e.Max)
}

// limitAdvice says when retrying a request refused for a limit can help.
func limitAdvice(e *LimitError) string {
	if e.Limit == SessionLimit {
		return "Retrying later may succeed: sessions end when their clients leave, or after a while without requests."
	}
	return "Retrying once one of this client's requests has finished may succeed."
}

// refused is the JSON-RPC error a client gets for a request refused with
// err (a limit, or the gateway's shutdown).
func refused(err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeRefused, Message: errorText(err)}
}
