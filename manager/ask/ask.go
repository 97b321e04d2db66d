package ask

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is a set of request kinds a server may send its client.
type Kind uint8

const (
	// Elicitation is elicitation/create: a form (fields from a schema) or
	// a URL for the user.
	Elicitation Kind = 1 << iota
	// Sampling is sampling/createMessage: a completion from the client's
	// model.
	Sampling
	// Roots is roots/list: the directories the server may work in.
	Roots
)

// All is every kind.
const All = Elicitation | Sampling | Roots

// String names the kinds as Lua and the events do ("elicitation",
// "sampling", "roots"), joined by "+".
func (k Kind) String() string {
	var parts []string
	for _, x := range []Kind{Elicitation, Sampling, Roots} {
		if k&x != 0 {
			parts = append(parts, x.name())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func (k Kind) name() string {
	switch k {
	case Elicitation:
		return "elicitation"
	case Sampling:
		return "sampling"
	case Roots:
		return "roots"
	}
	return "unknown"
}

// ParseKind returns the kind named s ("elicitation", "sampling", "roots").
func ParseKind(s string) (Kind, bool) {
	for _, k := range []Kind{Elicitation, Sampling, Roots} {
		if k.name() == s {
			return k, true
		}
	}
	return 0, false
}

// From says who asks and for whom: the server that sent the request and
// the client whose session it came on ("" for the host's own session).
type From struct {
	Server string
	Client string
}

// ErrNoAnswer is returned by an [Answerer] that cannot answer a request
// (no handler, a client without the capability): the next answerer is
// tried.
var ErrNoAnswer = errors.New("nobody to answer")

// An Answerer answers requests from servers. Its methods are called on the
// session's goroutines, concurrently, and must honour ctx: it ends when the
// server's request times out or is cancelled. A method returns ErrNoAnswer
// (possibly wrapped) to let the next answerer try; any other error goes
// back to the server.
type Answerer interface {
	// Offers reports the kinds it may answer; the manager declares the
	// union of its answerers' offers as the client's capabilities.
	Offers() Kind
	Elicit(ctx context.Context, from From, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	CreateMessage(ctx context.Context, from From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	ListRoots(ctx context.Context, from From) ([]*mcp.Root, error)
}

// A SoleClient is an Answerer that can tell, when asked, whether the
// client it answers for is the only client the host serves (the only
// gateway client connected): a request a shared server sends outside any
// call may then go to it, since it can belong to nobody else. An answerer
// that is not one is asked such a request only when the server is trusted
// to ask about its calls in flight (see manager.QuestionsCaller).
type SoleClient interface {
	SoleClient() bool
}

// A URLOpener is an Answerer that can tell whether its user can be shown
// a URL to open (URL-mode elicitation): a login that a call of its client
// needs is then sent to it as the authorization link, instead of being
// left to the host.
type URLOpener interface {
	OpensURLs() bool
}

// Mode is the mode of an elicitation, "form" or "url", inferred as the SDK
// does when the server gave none.
func Mode(p *mcp.ElicitParams) string {
	switch {
	case p == nil:
		return "form"
	case p.Mode != "":
		return p.Mode
	case p.URL != "" || p.ElicitationID != "":
		return "url"
	}
	return "form"
}

// A Reporter sends the server progress on the request it asked: a
// client answering a long question (a form, a completion) may report
// progress, which goes back to the server under the request's own token.
type Reporter func(ctx context.Context, progress, total float64, message string)

type reporterKey struct{}

// WithReporter returns ctx carrying r, for the answerers of one request.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReporterOf is the Reporter of the request ctx belongs to, or nil when
// the server asked for no progress.
func ReporterOf(ctx context.Context) Reporter {
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}
