package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
)

// maxQueuedLogs bounds the server log messages waiting for delivery to
// clients; when clients are slower than the servers' logging, the newest
// are dropped rather than stalling the gateway.
const maxQueuedLogs = 256

// logSendTimeout bounds delivering one log message to one client.
const logSendTimeout = 2 * time.Second

// logEntry is one server log message and the endpoints whose clients may
// see it.
type logEntry struct {
	params  *mcp.LoggingMessageParams
	servers []*mcp.Server
	// client, if set, is the only client the message is for: it came from
	// that client's own session of a per-client server.
	client string
}

// forwardLog queues a server's log message (a notifications/message
// event) for the clients of every endpoint that serves that server; each
// client gets it only at or above the level it set with logging/setLevel
// (none before it sets one). Only the run goroutine calls it.
func (g *Gateway) forwardLog(e events.Event) {
	p, _ := e.Fields["params"].(map[string]any)
	level, _ := p["level"].(string)
	if level == "" {
		return
	}
	logger, _ := p["logger"].(string)
	if logger == "" {
		logger = e.Server
	} else {
		logger = e.Server + "/" + logger
	}
	entry := logEntry{params: &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: p["data"]},
		client: e.Text("client")}
	for key, ep := range g.endpoints {
		if key.sel == everything || key.sel == oneServer && key.name == e.Server {
			entry.servers = append(entry.servers, ep.srv)
		}
	}
	if len(entry.servers) == 0 {
		return
	}
	select {
	case g.logs <- entry:
	default: // clients are behind: drop it
	}
}

// deliverLogs sends queued log messages until the gateway closes.
func (g *Gateway) deliverLogs() {
	defer close(g.logsDone)
	for {
		select {
		case <-g.ctx.Done():
			return
		case e := <-g.logs:
			for _, srv := range e.servers {
				for ss := range srv.Sessions() {
					if e.client != "" && g.clients.labelOf(ss) != e.client {
						continue // another client's session said it
					}
					ctx, cancel := context.WithTimeout(g.ctx, logSendTimeout)
					_ = ss.Log(ctx, e.params)
					cancel()
				}
			}
		}
	}
}
