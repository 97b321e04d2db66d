package clientconf

import (
	"errors"
	"fmt"
)

// EntryName is the key mcpvisor's own entry has in a client's list.
const EntryName = "mcpvisor"

// Entry is how a client reaches mcpvisor: a command it starts (stdio), or
// the URL of a running gateway.
type Entry struct {
	// Command and Args start `mcpvisor serve` over stdio.
	Command string
	Args    []string
	// URL is a running gateway's endpoint (http://127.0.0.1:8931/mcp);
	// when set, Command and Args are not used.
	URL string
	// TokenEnv names the environment variable the client reads the
	// gateway's bearer token from; "" sends no Authorization header. The
	// token itself is never written into a client's file.
	TokenEnv string
}

// ErrStdioOnly is returned for an HTTP entry in a client that starts its
// servers only as commands.
var ErrStdioOnly = errors.New("this client starts its MCP servers as commands only")

// Shape is the JSON (or TOML) value c keeps for e.
func (c *Client) Shape(e Entry) (map[string]any, error) {
	v, err := c.shape(e)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return v, nil
}

func stdio(e Entry) map[string]any {
	return map[string]any{"command": e.Command, "args": nonNil(e.Args)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// headers is the Authorization header with the token taken from the
// client's environment, in the client's own interpolation syntax.
func headers(e Entry, interp string) map[string]any {
	if e.TokenEnv == "" {
		return nil
	}
	return map[string]any{"Authorization": "Bearer " + fmt.Sprintf(interp, e.TokenEnv)}
}

// stdioOnly is the shape of a client that cannot reach an HTTP server by
// URL (Claude Desktop: remote servers are added in its settings, not in
// its file).
func stdioOnly(name string) func(Entry) (map[string]any, error) {
	return func(e Entry) (map[string]any, error) {
		if e.URL != "" {
			return nil, fmt.Errorf("%w: leave out --http and %s starts mcpvisor serve itself", ErrStdioOnly, name)
		}
		return stdio(e), nil
	}
}

// typed is the shape of clients whose entries carry "type" (Claude Code,
// VS Code).
func typed(interp string) func(Entry) (map[string]any, error) {
	return func(e Entry) (map[string]any, error) {
		if e.URL == "" {
			v := stdio(e)
			v["type"] = "stdio"
			return v, nil
		}
		v := map[string]any{"type": "http", "url": e.URL}
		if h := headers(e, interp); h != nil {
			v["headers"] = h
		}
		return v, nil
	}
}

// untyped is the shape of clients that tell a remote server by its URL
// key (Cursor: "url", Windsurf: "serverUrl").
func untyped(urlKey, interp string) func(Entry) (map[string]any, error) {
	return func(e Entry) (map[string]any, error) {
		if e.URL == "" {
			return stdio(e), nil
		}
		v := map[string]any{urlKey: e.URL}
		if h := headers(e, interp); h != nil {
			v["headers"] = h
		}
		return v, nil
	}
}

// codexShape is Codex's [mcp_servers.NAME] table: command and args, or a
// streamable HTTP url with the name of the variable holding its token.
func codexShape(e Entry) (map[string]any, error) {
	if e.URL == "" {
		return stdio(e), nil
	}
	v := map[string]any{"url": e.URL}
	if e.TokenEnv != "" {
		v["bearer_token_env_var"] = e.TokenEnv
	}
	return v, nil
}
