package main

import (
	"github.com/mcpvisor/mcpvisor/gateway"
	webui "github.com/mcpvisor/mcpvisor/gateway/console"
)

// webConsole is the web console served at /ui beside gw's endpoints,
// behind the same token.
func (h *host) webConsole(gw *gateway.Gateway, token string) *webui.Console {
	return webui.New(webui.Options{Backend: h.mgr, Token: token, Logger: h.log, Authenticated: gateway.Authenticated,
		Clients: func() []webui.Client {
			var out []webui.Client
			for _, c := range gw.Clients() {
				out = append(out, webui.Client{ID: c.ID, Name: c.Name, Version: c.Version,
					Transport: c.Transport, Endpoint: c.Endpoint, Since: c.Since})
			}
			return out
		}})
}
