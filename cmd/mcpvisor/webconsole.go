package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mcpvisor/mcpvisor/gateway"
	webui "github.com/mcpvisor/mcpvisor/gateway/console"
)

// webConsole is the web console served at /ui beside gw's endpoints,
// behind the same token; $MCPVISOR_VIEW_TOKEN, if set, is a second token
// that may only look at it.
func (h *host) webConsole(gw *gateway.Gateway, token string) *webui.Console {
	opts := webui.Options{Backend: h.mgr, Token: token, ViewToken: os.Getenv("MCPVISOR_VIEW_TOKEN"),
		Logger: h.log, Authenticated: gateway.Authenticated,
		Clients: func() []webui.Client {
			var out []webui.Client
			for _, c := range gw.Clients() {
				out = append(out, webui.Client{ID: c.ID, Name: c.Name, Version: c.Version,
					Transport: c.Transport, Endpoint: c.Endpoint, Toolset: c.Toolset, Mode: string(c.Mode),
					InFlight: c.InFlight, Since: c.Since})
			}
			return out
		}}
	if path := h.configPath; path != "" {
		opts.Reload = func(ctx context.Context) (string, error) { return h.reloadConfig(ctx, path) }
	}
	return webui.New(opts)
}

// reloadConfig reloads the config file at path, as saving it would, and
// says what changed.
func (h *host) reloadConfig(ctx context.Context, path string) (string, error) {
	res, err := h.rt.LoadConfig(ctx, path)
	if err != nil {
		return "", err
	}
	h.log.Info("config reloaded", "file", path, "from", "web console")
	var parts []string
	for _, c := range []struct {
		what  string
		names []string
	}{{"added", res.Added}, {"removed", res.Removed}, {"replaced", res.Replaced}} {
		if len(c.names) > 0 {
			parts = append(parts, c.what+" "+strings.Join(c.names, ", "))
		}
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", res.Unchanged))
	return path + ": " + strings.Join(parts, "; "), nil
}

// checkServeAddr is gateway.CheckAddr of addr with token and, when
// $MCPVISOR_VIEW_TOKEN is set beside a token, with it too: on an address
// that is not loopback it guards the console as the token guards all.
func checkServeAddr(addr, token string) error {
	if err := gateway.CheckAddr(addr, token); err != nil {
		return err
	}
	if view := os.Getenv("MCPVISOR_VIEW_TOKEN"); view != "" && token != "" {
		if err := gateway.CheckAddr(addr, view); err != nil {
			return fmt.Errorf("MCPVISOR_VIEW_TOKEN: %w", err)
		}
	}
	return nil
}
