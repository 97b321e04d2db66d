package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// importEnv is the host environment the imported declarations are decoded
// against.
func importEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"GITHUB_TOKEN":     "ghp_test",
		"CONTEXT7_API_KEY": "c7",
		"API_TOKEN":        "tok",
		"HOME":             "/home/ada",
	}[name]
	return v, ok
}

func readImport(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	require.NoError(t, err)
	return data
}

// Each flavour of mcpServers config file becomes the declarations
// DecodeSpec understands, sorted by name.
func TestParseImport(t *testing.T) {
	tests := []struct {
		file string
		want []config.Declaration
	}{
		{
			file: "claude_desktop_config.json",
			want: []config.Declaration{
				{Name: "filesystem", Entry: `mcpServers["filesystem"]`, Raw: map[string]any{
					"command": []any{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/Users/ada/Desktop", "/Users/ada/Downloads"},
				}},
				{Name: "github", Entry: `mcpServers["github"]`, Raw: map[string]any{
					"command": []any{"npx", "-y", "@modelcontextprotocol/server-github"},
					"env":     map[string]any{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
				}},
				{Name: "sqlite", Entry: `mcpServers["sqlite"]`, Raw: map[string]any{
					"command": []any{"uvx", "mcp-server-sqlite", "--db-path", "/Users/ada/test.db"},
				}},
			},
		},
		{
			file: "cursor_mcp.json",
			want: []config.Declaration{
				{Name: "context7", Entry: `mcpServers["context7"]`, Raw: map[string]any{
					"url":     "https://mcp.context7.com/mcp",
					"headers": map[string]any{"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
				}},
				{Name: "internal-docs", Entry: `mcpServers["internal-docs"]`, Raw: map[string]any{
					"url":       "http://localhost:8931/sse",
					"transport": "sse",
					"headers":   map[string]any{"Authorization": "Bearer ${API_TOKEN}", "X-Team": "platform"},
				}},
				{Name: "linear", Entry: `mcpServers["linear"]`, Raw: map[string]any{
					"url":       "https://mcp.linear.app/mcp",
					"transport": "http",
				}},
				{Name: "puppeteer", Entry: `mcpServers["puppeteer"]`, Raw: map[string]any{
					"command": []any{"npx", "-y", "@modelcontextprotocol/server-puppeteer"},
					"enabled": false,
				}},
			},
		},
		{
			// Comments and trailing commas, "type", ${env:VAR}, disabled.
			file: "vscode_mcp.json",
			want: []config.Declaration{
				{Name: "github", Entry: `servers["github"]`, Raw: map[string]any{
					"url":       "https://api.githubcopilot.com/mcp/",
					"transport": "http",
					"headers":   map[string]any{"Authorization": "Bearer ${GITHUB_TOKEN}"},
				}},
				{Name: "legacy-sse", Entry: `servers["legacy-sse"]`, Raw: map[string]any{
					"url":       "http://localhost:3001/sse",
					"transport": "sse",
					"enabled":   false,
				}},
				{Name: "memory", Entry: `servers["memory"]`, Raw: map[string]any{
					"command":   []any{"docker", "run", "-i", "--rm", "-e", "MEMORY_FILE_PATH", "mcp/memory"},
					"transport": "stdio",
					"env":       map[string]any{"MEMORY_FILE_PATH": "${HOME}/memory.json", "MAX_ENTRIES": 500.0},
					"cwd":       "${HOME}/mcp",
				}},
			},
		},
		{
			file: "vscode_settings.json",
			want: []config.Declaration{
				{Name: "fetch", Entry: `mcp.servers["fetch"]`, Raw: map[string]any{
					"command": []any{"uvx", "mcp-server-fetch"},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := config.ParseImport(tt.file, readImport(t, tt.file))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			// Every declaration is one DecodeSpec accepts.
			for _, d := range got {
				_, err := config.DecodeSpec(d.Name, d.Raw, config.DecodeOptions{LookupEnv: importEnv})
				require.NoError(t, err, "%s", d.Entry)
			}
		})
	}
}

// What the imported declarations decode to: transports, expansion of the
// rewritten ${env:VAR}, disabled servers.
func TestParseImportDecodes(t *testing.T) {
	decls, err := config.ParseImport("vscode_mcp.json", readImport(t, "vscode_mcp.json"))
	require.NoError(t, err)
	specs := map[string]manager.Spec{}
	for _, d := range decls {
		s, err := config.DecodeSpec(d.Name, d.Raw, config.DecodeOptions{LookupEnv: importEnv})
		require.NoError(t, err)
		specs[d.Name] = s
	}
	require.Equal(t, manager.TransportHTTP, specs["github"].Transport)
	require.Equal(t, map[string]string{"Authorization": "Bearer ghp_test"}, specs["github"].Headers)
	require.Equal(t, manager.TransportSSE, specs["legacy-sse"].Transport)
	require.True(t, specs["legacy-sse"].Disabled)
	require.Equal(t, manager.TransportStdio, specs["memory"].Transport)
	require.Equal(t, map[string]string{"MEMORY_FILE_PATH": "/home/ada/memory.json", "MAX_ENTRIES": "500"}, specs["memory"].Env)
	require.Equal(t, "/home/ada/mcp", specs["memory"].Cwd)
}

func TestParseImportEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []config.Declaration
	}{
		{name: "no servers", data: `{"mcpServers": {}}`, want: nil},
		{name: "byte order mark", data: "\uFEFF" + `{"servers": {"a": {"command": "x"}}}`,
			want: []config.Declaration{{Name: "a", Entry: `servers["a"]`, Raw: map[string]any{"command": []any{"x"}}}}},
		{name: "sorted case-insensitively, names trimmed", data: `{"mcpServers": {"b": {"url": "http://b"}, " A ": {"url": "http://a"}}}`,
			want: []config.Declaration{
				{Name: "A", Entry: `mcpServers[" A "]`, Raw: map[string]any{"url": "http://a"}},
				{Name: "b", Entry: `mcpServers["b"]`, Raw: map[string]any{"url": "http://b"}},
			}},
		{name: "disabled false is the default", data: `{"mcpServers": {"a": {"command": "x", "args": [], "disabled": false}}}`,
			want: []config.Declaration{{Name: "a", Entry: `mcpServers["a"]`, Raw: map[string]any{"command": []any{"x"}}}}},
		{name: "type and transport agree", data: `{"servers": {"a": {"url": "http://a", "type": "streamable-http", "transport": "HTTP"}}}`,
			want: []config.Declaration{{Name: "a", Entry: `servers["a"]`, Raw: map[string]any{"url": "http://a", "transport": "http"}}}},
		{name: "comment markers inside strings stay", data: `{"mcpServers": {"a": {"url": "http://a/*b*/", "headers": {"X": "//, ]"}}}}`,
			want: []config.Declaration{{Name: "a", Entry: `mcpServers["a"]`, Raw: map[string]any{"url": "http://a/*b*/", "headers": map[string]any{"X": "//, ]"}}}}},
		{name: "other clients' settings are skipped", data: `{"mcpServers": {"a": {"command": "x", "autoApprove": ["t"], "alwaysAllow": [], "timeout": 60, "envFile": ".env"}}}`,
			want: []config.Declaration{{Name: "a", Entry: `mcpServers["a"]`, Raw: map[string]any{"command": []any{"x"}}}}},
		{name: "escaped quotes inside strings", data: `{"mcpServers": {"a": {"command": "x", "args": ["say \"hi\" // not a comment", "b"]}}}`,
			want: []config.Declaration{{Name: "a", Entry: `mcpServers["a"]`, Raw: map[string]any{"command": []any{"x", `say "hi" // not a comment`, "b"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.ParseImport("mcp.json", []byte(tt.data))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// Every problem of a file at once, each naming the file and the entry.
func TestParseImportErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{
			name: "typo with did-you-mean",
			data: `{"mcpServers": {"git": {"comand": "uvx", "args": ["mcp-server-git"]}}}`,
			want: `import: 2 problems: mcp.json: mcpServers["git"]: unknown key "comand"; did you mean "command"?; mcp.json: mcpServers["git"]: args: given without "command"`,
		},
		{
			name: "unknown key without a close match",
			data: `{"mcpServers": {"git": {"command": "uvx", "onStartup": ["status"]}}}`,
			want: `import: mcp.json: mcpServers["git"]: unknown key "onStartup"; known keys: args, command, cwd, disabled, env, headers, transport, type, url`,
		},
		{
			name: "invalid JSON at line and column",
			data: "{\n  \"mcpServers\": {\n    \"git\": {\"command\": \"uvx\" \"args\": []}\n  }\n}\n",
			want: `import: mcp.json:3:30: invalid JSON: invalid character '"' after object key:value pair`,
		},
		{
			name: "column counts characters",
			data: "{\"mcpServers\": {\"café\": ]}}",
			want: `import: mcp.json:1:25: invalid JSON: invalid character ']' looking for beginning of value`,
		},
		{
			name: "truncated",
			data: "{\"mcpServers\": {\n",
			want: `import: mcp.json:1:17: invalid JSON: unexpected end of JSON input`,
		},
		{
			name: "unterminated comment",
			data: "{\n  /* servers\n  \"mcpServers\": {}\n}\n",
			want: `import: mcp.json:2:3: invalid JSON: invalid character '/' looking for beginning of object key string`,
		},
		{
			name: "empty file",
			data: " \n",
			want: `import: mcp.json: empty file; expected a JSON object with "mcpServers" or "servers"`,
		},
		{
			name: "top level is not an object",
			data: `[{"command": "uvx"}]`,
			want: `import: mcp.json: must be a JSON object with "mcpServers" or "servers", got an array`,
		},
		{
			name: "no servers object",
			data: `{"globalShortcut": "Ctrl+Space"}`,
			want: `import: mcp.json: no "mcpServers" object (Claude Desktop, Cursor) or "servers" object (VS Code mcp.json, or "mcp": {"servers": …} in settings.json)`,
		},
		{
			name: "misspelt servers object",
			data: `{"mcp_servers": {}}`,
			want: `import: mcp.json: no "mcpServers" object (Claude Desktop, Cursor) or "servers" object (VS Code mcp.json, or "mcp": {"servers": …} in settings.json); found "mcp_servers", did you mean "mcpServers"?`,
		},
		{
			name: "both flavours",
			data: `{"mcpServers": {}, "servers": {}}`,
			want: `import: mcp.json: has both "mcpServers" and "servers"; keep one`,
		},
		{
			name: "servers is not an object",
			data: `{"servers": [{"command": "uvx"}]}`,
			want: `import: mcp.json: servers: must be an object of servers by name, got an array`,
		},
		{
			name: "entry is not an object",
			data: `{"mcp": {"servers": {"git": "uvx mcp-server-git"}}}`,
			want: `import: mcp.json: mcp.servers["git"]: must be an object like {"command": "npx", "args": ["-y", "pkg"]} or {"url": "https://…"}, got string "uvx mcp-server-git"`,
		},
		{
			name: "wrong types",
			data: `{"mcpServers": {"x": {"command": ["uvx", "pkg"], "cwd": false, "headers": "Authorization: Bearer t", "transport": 1}}}`,
			want: `import: 4 problems: ` +
				`mcp.json: mcpServers["x"]: command: must be the program as a non-empty string (its arguments go in "args"), got an array; ` +
				`mcp.json: mcpServers["x"]: cwd: must be a string, got boolean false; ` +
				`mcp.json: mcpServers["x"]: transport: must be a string, got number 1; ` +
				`mcp.json: mcpServers["x"]: headers: must be an object of strings like {"KEY": "value"}, got string "Authorization: Bearer t"`,
		},
		{
			name: "bad args",
			data: `{"mcpServers": {"x": {"command": "node", "args": ["server.js", 3000, null]}}}`,
			want: `import: 2 problems: mcp.json: mcpServers["x"]: args[1]: must be a string, got number 3000; mcp.json: mcpServers["x"]: args[2]: must be a string, got null`,
		},
		{
			name: "args not a list",
			data: `{"mcpServers": {"x": {"command": "node", "args": "server.js"}}}`,
			want: `import: mcp.json: mcpServers["x"]: args: must be an array of strings, got string "server.js"`,
		},
		{
			name: "type and transport disagree",
			data: `{"servers": {"x": {"url": "http://x", "type": "http", "transport": "sse"}}}`,
			want: `import: mcp.json: servers["x"]: transport: "sse" contradicts type "http"`,
		},
		{
			name: "name with a dot",
			data: `{"mcpServers": {"github.com": {"url": "https://api.githubcopilot.com/mcp/"}}}`,
			want: `import: mcp.json: mcpServers["github.com"]: server name "github.com" contains '.', which separates server and tool names (e.g. "github_com")`,
		},
		{
			name: "VS Code input variable",
			data: `{"servers": {"x": {"command": "x", "env": {"TOKEN": "${input:token}"}}}}`,
			want: `import: mcp.json: servers["x"]: env["TOKEN"]: VS Code input variable ${input:token} cannot be imported; use ${VAR} from the environment instead`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.ParseImport("mcp.json", []byte(tt.data))
			require.Nil(t, got)
			requireImportError(t, err, tt.want)
		})
	}
}

// A file with many mistakes lists them all, entries in name order.
func TestParseImportListsEveryProblem(t *testing.T) {
	got, err := config.ParseImport("broken.json", readImport(t, "broken.json"))
	require.Nil(t, got)
	want := []string{
		`broken.json: mcpServers["Git"]: must be an object like {"command": "npx", "args": ["-y", "pkg"]} or {"url": "https://…"}, got an array`,
		`broken.json: mcpServers["git"]: same name as mcpServers["Git"] (server names are compared ignoring case, width and look-alike letters)`,
		`broken.json: mcpServers["git"]: unknown key "comand"; did you mean "command"?`,
		`broken.json: mcpServers["git"]: args: given without "command"`,
		`broken.json: mcpServers["git"]: env["GIT_DIR"]: must be a string, got null`,
		`broken.json: mcpServers["vault"]: headers["Authorization"]: VS Code input variable ${input:vault-token} cannot be imported; use ${VAR} from the environment instead`,
		`broken.json: mcpServers["web search"]: server name "web search" contains whitespace`,
		`broken.json: mcpServers["web search"]: url: must be a string, got number 8080`,
		`broken.json: mcpServers["web search"]: type: must be "stdio", "http", "streamable-http" or "sse", got "websocket"`,
		`broken.json: mcpServers["web search"]: disabled: must be true or false, got string "yes"`,
	}
	requireImportError(t, err, "import: 10 problems: "+strings.Join(want, "; "))
}

func requireImportError(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, manager.ErrInvalidConfig)
	var me *manager.Error
	require.True(t, errors.As(err, &me))
	require.Equal(t, "import", me.Op)
	require.Empty(t, me.Server)
	require.Equal(t, want, err.Error())
}

// ParseImport never panics, and what it accepts DecodeSpec can decode
// without panicking.
func FuzzParseImport(f *testing.F) {
	for _, name := range []string{"claude_desktop_config.json", "cursor_mcp.json", "vscode_mcp.json", "vscode_settings.json", "broken.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "import", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("{/*\n*/\"servers\":{\"a\":{\"command\":\"x\",},},}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		decls, err := config.ParseImport("fuzz.json", data)
		if err != nil {
			require.ErrorIs(t, err, manager.ErrInvalidConfig)
			return
		}
		for _, d := range decls {
			_, _ = config.DecodeSpec(d.Name, d.Raw, config.DecodeOptions{LookupEnv: importEnv})
		}
	})
}
