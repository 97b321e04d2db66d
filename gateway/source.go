package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// Source is what the gateway serves: the servers a *manager.Manager keeps
// connected. The gateway only reads lists and forwards requests; it never
// declares, connects or removes a server. It tells the source what its
// clients may answer and when one goes away.
type Source interface {
	Names() []string
	Status(name string) (manager.Status, error)
	Spec(name string) (manager.Spec, error)
	Tools(server string) ([]manager.ToolInfo, error)
	Resources(server string) ([]manager.ResourceInfo, error)
	Prompts(server string) ([]manager.PromptInfo, error)
	Call(ctx context.Context, name string, args any, opts manager.CallOptions) (*mcp.CallToolResult, error)
	ReadResource(ctx context.Context, uri, server string, timeout time.Duration) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, name string, args map[string]string, timeout time.Duration) (*mcp.GetPromptResult, error)
	// Complete asks server, on client's own session of a per-client
	// server, to complete an argument of a prompt or resource template.
	Complete(ctx context.Context, server, client string, params *mcp.CompleteParams, timeout time.Duration) (*mcp.CompleteResult, error)
	Subscribe(server, uri string) error
	Unsubscribe(server, uri string) error
	Bus() *events.Bus
	// Notices is what servers say (log messages, resource updates), for
	// the gateway's listener.
	Notices() *notify.Hub
	// CallersAnswer declares what the gateway's clients may answer when a
	// server asks (see CallOptions.Answerer).
	CallersAnswer(kinds ask.Kind)
	// ReleaseClient frees what a client that went away held upstream (its
	// sessions on per-client servers); client is the CallOptions.Client
	// its calls were made with.
	ReleaseClient(client string)
}

var _ Source = (*manager.Manager)(nil)
