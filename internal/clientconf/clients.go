package clientconf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
)

// Format is how a client's file lists its servers.
type Format int

const (
	// MCPServers is JSON with a top-level "mcpServers" object (Claude
	// Desktop, Claude Code, Cursor, Windsurf).
	MCPServers Format = iota
	// Servers is JSON with a top-level "servers" object (VS Code's mcp.json).
	Servers
	// CodexTOML is TOML with one [mcp_servers.NAME] table per server.
	CodexTOML
)

// Client is one AI client mcpvisor can be added to.
type Client struct {
	// ID is the name on the command line: "claude-code".
	ID string
	// Name is the client's own name: "Claude Code".
	Name   string
	Format Format
	// path is where the client keeps its user-wide server list.
	path func(Env) string
	// shape builds the client's entry for mcpvisor.
	shape func(Entry) (map[string]any, error)
}

// Env is what a client's file location depends on. [HostEnv] fills it from
// the running system; tests use a temporary home.
type Env struct {
	GOOS string
	// Home is the user's home directory.
	Home string
	// ConfigDir is the OS's per-user configuration directory, as
	// os.UserConfigDir gives it: $XDG_CONFIG_HOME or ~/.config on Linux,
	// ~/Library/Application Support on macOS, %AppData% on Windows.
	ConfigDir string
	// CodexHome is $CODEX_HOME when set.
	CodexHome string
}

// HostEnv is the [Env] of the running system.
func HostEnv(goos string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the home directory: %w", err)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the configuration directory: %w", err)
	}
	return Env{GOOS: goos, Home: home, ConfigDir: dir, CodexHome: os.Getenv("CODEX_HOME")}, nil
}

// Path is where c keeps its user-wide list of servers in env.
func (c *Client) Path(env Env) string { return c.path(env) }

// all lists the clients in the order help text shows them. Locations come
// from each client's own documentation of its user-level MCP configuration.
var all = []*Client{
	{
		ID: "claude-desktop", Name: "Claude Desktop", Format: MCPServers,
		path: func(e Env) string {
			return filepath.Join(e.ConfigDir, "Claude", "claude_desktop_config.json")
		},
		shape: stdioOnly("Claude Desktop"),
	},
	{
		ID: "claude-code", Name: "Claude Code", Format: MCPServers,
		path:  func(e Env) string { return filepath.Join(e.Home, ".claude.json") },
		shape: typed("${%s}"),
	},
	{
		ID: "cursor", Name: "Cursor", Format: MCPServers,
		path:  func(e Env) string { return filepath.Join(e.Home, ".cursor", "mcp.json") },
		shape: untyped("url", "${env:%s}"),
	},
	{
		ID: "vscode", Name: "VS Code", Format: Servers,
		path: func(e Env) string {
			return filepath.Join(e.ConfigDir, "Code", "User", "mcp.json")
		},
		shape: typed("${env:%s}"),
	},
	{
		ID: "windsurf", Name: "Windsurf", Format: MCPServers,
		path: func(e Env) string {
			return filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json")
		},
		shape: untyped("serverUrl", "${env:%s}"),
	},
	{
		ID: "codex", Name: "Codex", Format: CodexTOML,
		path: func(e Env) string {
			if e.CodexHome != "" {
				return filepath.Join(e.CodexHome, "config.toml")
			}
			return filepath.Join(e.Home, ".codex", "config.toml")
		},
		shape: codexShape,
	},
}

// All returns every client mcpvisor knows, in a stable order.
func All() []*Client { return slices.Clone(all) }

// IDs is the list of client ids, for help and error text.
func IDs() []string {
	ids := make([]string, len(all))
	for i, c := range all {
		ids[i] = c.ID
	}
	return ids
}

// UnknownClientError is returned by [Lookup] for a name no client has.
type UnknownClientError struct {
	Name string
	// Suggestion is the closest known id, or "".
	Suggestion string
}

func (e *UnknownClientError) Error() string {
	msg := fmt.Sprintf("unknown client %q (known: %s)", e.Name, strings.Join(IDs(), ", "))
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// Lookup finds a client by its id, ignoring case.
func Lookup(id string) (*Client, error) {
	for _, c := range all {
		if strings.EqualFold(c.ID, id) {
			return c, nil
		}
	}
	return nil, &UnknownClientError{Name: id, Suggestion: suggest.Closest(id, IDs())}
}
