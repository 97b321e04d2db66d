package testutil

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InProcess is an in-process MCP server for a manager (a Spec's Dialer):
// every dial connects Server to a new pair of in-memory transports.
type InProcess struct{ Server *mcp.Server }

// Dial connects the server and returns the client's end.
func (d *InProcess) Dial(ctx context.Context) (mcp.Transport, error) {
	client, server := mcp.NewInMemoryTransports()
	if _, err := d.Server.Connect(ctx, server, nil); err != nil {
		return nil, err
	}
	return client, nil
}
