package clientconf

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var entry = map[string]any{"command": "/bin/mcpvisor", "args": []string{"serve"}}

func TestSetJSONKeepsTheRestOfTheFile(t *testing.T) {
	cursor, _ := Lookup("cursor")
	tests := []struct {
		name, in, want string
	}{
		{
			name: "indented, with another server and another key",
			in: `{
    "numStartups": 3,
    "mcpServers": {
        "memory": {
            "command": "npx"
        }
    }
}
`,
			want: `{
    "numStartups": 3,
    "mcpServers": {
        "memory": {
            "command": "npx"
        },
        "mcpvisor": {
            "args": [
                "serve"
            ],
            "command": "/bin/mcpvisor"
        }
    }
}
`,
		},
		{
			name: "no server list yet",
			in:   "{\n  \"theme\": \"dark\"\n}\n",
			want: "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mcpvisor\": {\n      \"args\": [\n        \"serve\"\n      ],\n      \"command\": \"/bin/mcpvisor\"\n    }\n  }\n}\n",
		},
		{
			name: "an empty file",
			in:   "",
			want: "{\n  \"mcpServers\": {\n    \"mcpvisor\": {\n      \"args\": [\n        \"serve\"\n      ],\n      \"command\": \"/bin/mcpvisor\"\n    }\n  }\n}\n",
		},
		{
			name: "one line stays one line",
			in:   `{"a":1,"mcpServers":{}}`,
			want: `{"a":1,"mcpServers":{"mcpvisor":{"args":["serve"],"command":"/bin/mcpvisor"}}}`,
		},
		{
			name: "an existing entry is replaced in place",
			in:   "{\n  \"mcpServers\": {\n    \"mcpvisor\": {\"command\": \"old\"},\n    \"z\": {}\n  }\n}",
			want: "{\n  \"mcpServers\": {\n    \"mcpvisor\": {\n      \"args\": [\n        \"serve\"\n      ],\n      \"command\": \"/bin/mcpvisor\"\n    },\n    \"z\": {}\n  }\n}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cursor.Set([]byte(tt.in), EntryName, entry)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestDeleteUndoesSet(t *testing.T) {
	for _, id := range IDs() {
		c, _ := Lookup(id)
		in := map[Format]string{
			MCPServers: "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"memory\": {\n      \"command\": \"npx\"\n    }\n  }\n}\n",
			Servers:    "{\n\t\"servers\": {\n\t\t\"memory\": {\"type\": \"stdio\", \"command\": \"npx\"}\n\t}\n}\n",
			CodexTOML:  "model = \"o3\"\n\n[mcp_servers.memory]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n",
		}[c.Format]
		t.Run(id, func(t *testing.T) {
			v, err := c.Shape(Entry{Command: "/bin/mcpvisor", Args: []string{"serve"}})
			require.NoError(t, err)
			added, err := c.Set([]byte(in), EntryName, v)
			require.NoError(t, err)
			names, _, err := c.Servers(added)
			require.NoError(t, err)
			assert.Equal(t, []string{"mcpvisor", "memory"}, names)

			removed, found, err := c.Delete(added, EntryName)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, in, string(removed), "taking mcpvisor out gives back the file as it was")

			again, found, err := c.Delete(removed, EntryName)
			require.NoError(t, err)
			assert.False(t, found)
			assert.Equal(t, in, string(again))
		})
	}
}

func TestCodexServersBecomeImportable(t *testing.T) {
	codex, _ := Lookup("codex")
	in := `[mcp_servers.github]
url = "https://example.invalid/mcp"
bearer_token_env_var = "GH_TOKEN"
tool_timeout_sec = 30

[mcp_servers."odd name"]
command = "srv"
enabled = false

[mcp_servers."odd name".env]
KEY = "v"
`
	names, doc, err := codex.Servers([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, []string{"github", "odd name"}, names)
	assert.JSONEq(t, `{"mcpServers": {
		"github": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
		"odd name": {"command": "srv", "disabled": true, "env": {"KEY": "v"}}}}`, string(doc))

	out, found, err := codex.Delete([]byte(in), "odd name")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "[mcp_servers.github]\nurl = \"https://example.invalid/mcp\"\nbearer_token_env_var = \"GH_TOKEN\"\ntool_timeout_sec = 30\n", string(out))
}

// Get hands back a server in the client's own keys, so that what Delete
// took out can be Set back as it was (Codex's own settings included).
func TestGetGivesBackWhatDeleteTookOut(t *testing.T) {
	codex, _ := Lookup("codex")
	in := "[mcp_servers.github]\nurl = \"https://example.invalid/mcp\"\ntool_timeout_sec = 30\n"
	v, ok, err := codex.Get([]byte(in), "github")
	require.NoError(t, err)
	require.True(t, ok)
	gone, _, err := codex.Delete([]byte(in), "github")
	require.NoError(t, err)
	back, err := codex.Set(gone, "github", v)
	require.NoError(t, err)
	again, _, err := codex.Get(back, "github")
	require.NoError(t, err)
	assert.Equal(t, v, again)
	assert.Equal(t, int64(30), again["tool_timeout_sec"])

	cursor, _ := Lookup("cursor")
	_, ok, err = cursor.Get([]byte(`{"mcpServers": {"a": {"command": "x"}}}`), "b")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = cursor.Get([]byte(`{"mcpServers": {"a": 1}}`), "a")
	assert.ErrorIs(t, err, ErrNotJSON)
}

func TestFilesMCPVisorCannotEditAreRefused(t *testing.T) {
	vscode, _ := Lookup("vscode")
	_, err := vscode.Set([]byte("{\n  // my servers\n  \"servers\": {}\n}"), EntryName, entry)
	require.ErrorIs(t, err, ErrNotJSON)
	_, err = vscode.Set([]byte(`{"servers": []}`), EntryName, entry)
	require.ErrorIs(t, err, ErrNotJSON)

	codex, _ := Lookup("codex")
	_, _, err = codex.Delete([]byte("mcp_servers = { mcpvisor = { command = \"x\" } }\n"), EntryName)
	require.ErrorIs(t, err, ErrNotTOML, "an inline table cannot be taken out line by line")
	_, err = codex.Set([]byte("[broken"), EntryName, entry)
	require.ErrorIs(t, err, ErrNotTOML)
}

func TestEntriesPerClient(t *testing.T) {
	http := Entry{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "MCPVISOR_TOKEN"}
	tests := []struct {
		id   string
		want string
	}{
		{"claude-code", `{"type":"http","url":"http://127.0.0.1:8931/mcp","headers":{"Authorization":"Bearer ${MCPVISOR_TOKEN}"}}`},
		{"cursor", `{"url":"http://127.0.0.1:8931/mcp","headers":{"Authorization":"Bearer ${env:MCPVISOR_TOKEN}"}}`},
		{"vscode", `{"type":"http","url":"http://127.0.0.1:8931/mcp","headers":{"Authorization":"Bearer ${env:MCPVISOR_TOKEN}"}}`},
		{"windsurf", `{"serverUrl":"http://127.0.0.1:8931/mcp","headers":{"Authorization":"Bearer ${env:MCPVISOR_TOKEN}"}}`},
		{"codex", `{"url":"http://127.0.0.1:8931/mcp","bearer_token_env_var":"MCPVISOR_TOKEN"}`},
	}
	for _, tt := range tests {
		c, err := Lookup(tt.id)
		require.NoError(t, err)
		v, err := c.Shape(http)
		require.NoError(t, err)
		got, _ := json.Marshal(v)
		assert.JSONEq(t, tt.want, string(got), tt.id)
	}
	desktop, _ := Lookup("claude-desktop")
	_, err := desktop.Shape(http)
	require.ErrorIs(t, err, ErrStdioOnly)
}

func TestPathsPerOS(t *testing.T) {
	home := filepath.FromSlash("/home/u")
	env := map[string]Env{
		"linux":   {GOOS: "linux", Home: home, ConfigDir: filepath.Join(home, ".config")},
		"darwin":  {GOOS: "darwin", Home: home, ConfigDir: filepath.Join(home, "Library", "Application Support")},
		"windows": {GOOS: "windows", Home: home, ConfigDir: filepath.Join(home, "AppData", "Roaming")},
	}
	desktop, _ := Lookup("claude-desktop")
	assert.Equal(t, filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), desktop.Path(env["darwin"]))
	assert.Equal(t, filepath.Join(home, "AppData", "Roaming", "Claude", "claude_desktop_config.json"), desktop.Path(env["windows"]))
	code, _ := Lookup("Claude-Code")
	assert.Equal(t, filepath.Join(home, ".claude.json"), code.Path(env["linux"]))
	vscode, _ := Lookup("vscode")
	assert.Equal(t, filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json"), vscode.Path(env["darwin"]))
	codex, _ := Lookup("codex")
	assert.Equal(t, filepath.Join(home, ".codex", "config.toml"), codex.Path(env["linux"]))
	withHome := env["linux"]
	withHome.CodexHome = filepath.FromSlash("/opt/codex")
	assert.Equal(t, filepath.Join(withHome.CodexHome, "config.toml"), codex.Path(withHome))
}

func TestUnknownClientSuggests(t *testing.T) {
	_, err := Lookup("cursr")
	var unknown *UnknownClientError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "cursor", unknown.Suggestion)
	assert.Contains(t, err.Error(), "claude-desktop")
}
