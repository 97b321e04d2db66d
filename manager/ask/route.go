package ask

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Candidate is one answerer in line for a request.
type Candidate struct {
	Answerer Answerer
	// By says who it is, for events: "client" (the caller's client),
	// "server" (the server's own spec), "host" (Lua or the person at the
	// REPL).
	By string
	// Client is the client it is asked for (From.Client).
	Client string
}

// First asks the candidates that offer kind, in order, until one answers
// (ask returns anything but ErrNoAnswer), and returns that one and what ask
// returned. When none answers it returns ErrNoAnswer. ask is called with
// each candidate in turn.
func First(cands []Candidate, kind Kind, ask func(Candidate) error) (Candidate, error) {
	for _, c := range cands {
		if c.Answerer == nil || c.Answerer.Offers()&kind == 0 {
			continue
		}
		if err := ask(c); !errors.Is(err, ErrNoAnswer) {
			return c, err
		}
	}
	return Candidate{}, ErrNoAnswer
}

// FixedRoots answers roots/list with the given URIs: a server's own roots
// from its spec.
func FixedRoots(uris []string) Answerer {
	roots := make([]*mcp.Root, len(uris))
	for i, u := range uris {
		roots[i] = &mcp.Root{URI: u}
	}
	return fixedRoots(roots)
}

type fixedRoots []*mcp.Root

func (fixedRoots) Offers() Kind { return Roots }

func (fixedRoots) Elicit(context.Context, From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, ErrNoAnswer
}

func (fixedRoots) CreateMessage(context.Context, From, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, ErrNoAnswer
}

func (r fixedRoots) ListRoots(context.Context, From) ([]*mcp.Root, error) {
	return slices.Clone(r), nil
}
