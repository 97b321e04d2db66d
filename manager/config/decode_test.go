package config_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// env is the host environment the decoding tests see.
const ms = time.Millisecond

func env(name string) (string, bool) {
	v, ok := map[string]string{"TOKEN": "s3cret", "HOME": "/home/me", "PORT": "8080"}[name]
	return v, ok
}

func decodeWithEnv(raw map[string]any) (manager.Spec, error) {
	return config.DecodeSpec("git", raw, config.DecodeOptions{LookupEnv: env})
}

// What a valid declaration turns into, defaults included.
func TestDecodeSpecValid(t *testing.T) {
	defaults := func(s manager.Spec) manager.Spec {
		s.Timeouts = manager.Timeouts{Connect: 60 * time.Second, Request: 30 * time.Second,
			HealthInterval: 10 * time.Second, HealthTimeout: 5 * time.Second, Keepalive: 15 * time.Second,
			Server: 10 * time.Minute, Idle: 10 * time.Minute}
		s.Breaker = manager.Breaker{Failures: 5, Window: 2 * time.Minute, OpenFor: 30 * time.Second}
		s.Backoff = manager.Backoff{Initial: 100 * ms, Max: 3 * time.Second, Multiplier: 2, Jitter: 0.25}
		s.MaxFrameBytes = 16 << 20
		return s
	}
	tests := []struct {
		name string
		raw  map[string]any
		want manager.Spec
	}{
		{
			name: "command is stdio",
			raw:  map[string]any{"command": []any{"npx", "-y", "pkg"}},
			want: defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"npx", "-y", "pkg"}}),
		},
		{
			name: "url is streamable HTTP",
			raw:  map[string]any{"url": "http://127.0.0.1:3001/mcp"},
			want: defaults(manager.Spec{Transport: manager.TransportHTTP, URL: "http://127.0.0.1:3001/mcp"}),
		},
		{
			name: "url with transport sse",
			raw:  map[string]any{"url": "https://example.com/sse", "transport": "SSE"},
			want: defaults(manager.Spec{Transport: manager.TransportSSE, URL: "https://example.com/sse"}),
		},
		{
			name: "${VAR} expands in command, env, cwd, url and headers",
			raw: map[string]any{
				"command": []any{"server", "--token=${TOKEN}"},
				"env":     map[string]any{"API_TOKEN": "${TOKEN}", "PORT": 9000.0, "DEBUG": true},
				"cwd":     "${HOME}/src",
			},
			want: defaults(manager.Spec{
				Transport: manager.TransportStdio,
				Command:   []string{"server", "--token=s3cret"},
				Env:       map[string]string{"API_TOKEN": "s3cret", "PORT": "9000", "DEBUG": "true"},
				Cwd:       "/home/me/src",
				Written:   "server --token=${TOKEN}",                                // what is shown: never the token
				Secrets:   map[string]string{"TOKEN": "s3cret", "HOME": "/home/me"}, // hidden in what the server prints
			}),
		},
		{
			name: "headers",
			raw:  map[string]any{"url": "http://localhost:${PORT}/mcp", "headers": map[string]any{"Authorization": "Bearer ${TOKEN}"}},
			want: defaults(manager.Spec{
				Transport: manager.TransportHTTP,
				URL:       "http://localhost:8080/mcp",
				Headers:   map[string]string{"Authorization": "Bearer s3cret"},
				Written:   "http://localhost:${PORT}/mcp",
				Secrets:   map[string]string{"PORT": "8080", "TOKEN": "s3cret"},
			}),
		},
		{
			name: "questions",
			raw:  map[string]any{"command": []any{"x"}, "questions": "caller"},
			want: defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}, Questions: manager.QuestionsCaller}),
		},
		{
			name: "protocol pinned to the sessionless generation",
			raw:  map[string]any{"command": []any{"x"}, "protocol": "2026-07-28"},
			want: defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}, Protocol: manager.Protocol20260728}),
		},
		{
			name: "protocol pinned to the generation with sessions",
			raw:  map[string]any{"url": "http://x/mcp", "protocol": "2025-11-25"},
			want: defaults(manager.Spec{Transport: manager.TransportHTTP, URL: "http://x/mcp", Protocol: manager.Protocol20251125}),
		},
		{
			name: "protocol, the default spelled out",
			raw:  map[string]any{"command": []any{"x"}, "protocol": "auto"},
			want: defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}}),
		},
		{
			name: "questions, the default spelled out",
			raw:  map[string]any{"command": []any{"x"}, "questions": "own"},
			want: defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}}),
		},
		{
			name: "durations as strings or seconds, and the rest of the knobs",
			raw: map[string]any{
				"command":         []any{"x"},
				"enabled":         false,
				"timeouts":        map[string]any{"connect": "250ms", "request": 1.5},
				"backoff":         map[string]any{"initial": "1s", "max": 60, "multiplier": 3, "jitter": 0.5},
				"max_retries":     0,
				"max_frame_bytes": 1 << 20,
			},
			want: manager.Spec{
				Transport:  manager.TransportStdio,
				Command:    []string{"x"},
				Disabled:   true,
				MaxRetries: new(0),
				Timeouts: manager.Timeouts{Connect: 250 * ms, Request: 1500 * ms,
					HealthInterval: 10 * time.Second, HealthTimeout: 5 * time.Second, Keepalive: 15 * time.Second,
					Server: 10 * time.Minute, Idle: 10 * time.Minute},
				Backoff:       manager.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 3, Jitter: 0.5},
				Breaker:       manager.Breaker{Failures: 5, Window: 2 * time.Minute, OpenFor: 30 * time.Second},
				MaxFrameBytes: 1 << 20,
			},
		},
		{
			name: "jitter 0 means none (not the default)",
			raw:  map[string]any{"command": []any{"x"}, "backoff": map[string]any{"jitter": 0}},
			want: func() manager.Spec {
				s := defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}})
				s.Backoff.Jitter = manager.NoJitter
				return s
			}(),
		},
		{
			name: "every timeout, idle 0 disables idle close, breaker settings",
			raw: map[string]any{"command": []any{"x"},
				"timeouts": map[string]any{"health_interval": "20s", "health_timeout": 2, "keepalive": "5s", "server": "1h", "idle": 0},
				"breaker":  map[string]any{"failures": 3, "window": "1m", "open_for": "10s"}},
			want: func() manager.Spec {
				s := defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}})
				s.Timeouts.HealthInterval = 20 * time.Second
				s.Timeouts.HealthTimeout = 2 * time.Second
				s.Timeouts.Keepalive = 5 * time.Second
				s.Timeouts.Server = time.Hour
				s.Timeouts.Idle = manager.Never
				s.Breaker = manager.Breaker{Failures: 3, Window: time.Minute, OpenFor: 10 * time.Second}
				return s
			}(),
		},
		{
			name: "breaker = false turns it off",
			raw:  map[string]any{"command": []any{"x"}, "breaker": false},
			want: func() manager.Spec {
				s := defaults(manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}})
				s.Breaker.Disabled = true
				return s
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeWithEnv(tt.raw)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// Unknown fields, a missing or doubled transport and negative, zero or
// absurd values: every problem is reported at once, each naming the server
// and the field, as INVALID_CONFIG.
func TestDecodeSpecInvalid(t *testing.T) {
	cmd := []any{"x"}
	tests := []struct {
		name string
		raw  map[string]any
		want []string // the problems, in order
	}{
		{
			name: "questions of an unknown kind",
			raw:  map[string]any{"command": cmd, "questions": "anyone"},
			want: []string{`questions: must be "own" (the default: a client is asked only what its own call carries) or "caller" (also what comes while only its calls are in flight), got "anyone"`},
		},
		{
			name: "protocol of no generation",
			raw:  map[string]any{"command": cmd, "protocol": "2025-06-18"},
			want: []string{`protocol: must be "auto" (the default: the generation that lets every feature of the server reach every client), "2025-11-25" or "2026-07-28", got "2025-06-18"`},
		},
		{
			name: "protocol that is no string",
			raw:  map[string]any{"command": cmd, "protocol": 2026},
			want: []string{`protocol: must be a string, got number 2026`},
		},
		{
			name: "missing transport",
			raw:  map[string]any{},
			want: []string{`command: missing transport: set command = {"prog", "arg"} for a process or url = "http://…" for a remote server`},
		},
		{
			name: "both command and url",
			raw:  map[string]any{"command": cmd, "url": "http://x"},
			want: []string{`command: both command and url are set; a server is either a process (command) or a URL`},
		},
		{
			name: "unknown field with did-you-mean",
			raw:  map[string]any{"comand": cmd},
			want: []string{
				`comand: unknown field; did you mean "command"?`,
				`command: missing transport: set command = {"prog", "arg"} for a process or url = "http://…" for a remote server`,
			},
		},
		{
			name: "unknown field, nothing close",
			raw:  map[string]any{"command": cmd, "zzzzzz": 1},
			want: []string{`zzzzzz: unknown field; known fields: command, url, transport, env, cwd, headers, enabled, timeouts, backoff, breaker, max_retries, max_frame_bytes, expose, session, max_sessions, questions, roots, auth, protocol`},
		},
		{
			name: "expose",
			raw: map[string]any{"command": cmd, "expose": map[string]any{
				"prefix": "git hub", "hide": []any{"[x"}, "rename": map[string]any{"search": "find.all"}, "hidden": true}},
			want: []string{
				`expose.hidden: unknown field; did you mean "hide"?`,
				`expose.prefix: must be 1 to 32 of the characters a-z A-Z 0-9 _ -, got "git hub"`,
				`expose.hide: item 1: "[x" is not a usable pattern (use * and ?, e.g. "delete_*")`,
				`expose.rename: "search": the new name must be 1 to 64 of the characters a-z A-Z 0-9 _ -, got "find.all"`,
			},
		},
		{
			name: "expose for search",
			raw: map[string]any{"command": cmd, "expose": map[string]any{
				"pin": []any{"[x"}, "tags": map[string]any{"search": []any{"bugs", " "}}, "aliases": "x", "describe": map[string]any{"a": []any{}}}},
			want: []string{
				`expose.describe.a: must be a string, got a list`,
				`expose.aliases: must be a table of tool names to lists of words like {search_issues = {"bugs", "tickets"}}, got string "x"`,
				`expose.pin: item 1: "[x" is not a usable pattern (use * and ?, e.g. "get_*")`,
				`expose.tags: "search": item 2 is empty; give words a user would search for`,
			},
		},
		{
			name: "nested unknown field",
			raw:  map[string]any{"command": cmd, "timeouts": map[string]any{"conect": "1s"}},
			want: []string{`timeouts.conect: unknown field; did you mean "connect"?`},
		},
		{
			name: "negative and zero durations",
			raw: map[string]any{"command": cmd,
				"timeouts": map[string]any{"connect": "-1s", "request": 0},
				"backoff":  map[string]any{"initial": "0s", "max": -5}},
			want: []string{
				`timeouts.connect: must be > 0, got "-1s"`,
				`timeouts.request: must be > 0, got 0`,
				`backoff.initial: must be > 0, got "0s"`,
				`backoff.max: must be > 0, got -5`,
			},
		},
		{
			name: "a number string without unit",
			raw:  map[string]any{"command": cmd, "timeouts": map[string]any{"request": "10"}},
			want: []string{`timeouts.request: "10" has no unit; write e.g. "10s" or "10ms", or a number of seconds`},
		},
		{
			name: "not a duration",
			raw:  map[string]any{"command": cmd, "timeouts": map[string]any{"request": "soon", "connect": true}},
			want: []string{
				`timeouts.connect: must be a duration string like "30s" or a number of seconds, got boolean true`,
				`timeouts.request: "soon" is not a duration like "250ms", "30s" or "1m"`,
			},
		},
		{
			name: "absurd duration",
			raw:  map[string]any{"command": cmd, "timeouts": map[string]any{"connect": "100h"}},
			want: []string{`timeouts.connect: must be at most 1h0m0s, got 100h0m0s`},
		},
		{
			name: "jitter outside 0..1",
			raw:  map[string]any{"command": cmd, "backoff": map[string]any{"jitter": 1.5}},
			want: []string{`backoff.jitter: must be within 0..1, got 1.5`},
		},
		{
			name: "multiplier below 1",
			raw:  map[string]any{"command": cmd, "backoff": map[string]any{"multiplier": 0.5}},
			want: []string{`backoff.multiplier: must be within 1..100, got 0.5`},
		},
		{
			name: "max below initial",
			raw:  map[string]any{"command": cmd, "backoff": map[string]any{"initial": "10s", "max": "1s"}},
			want: []string{`backoff.max: must be at least backoff.initial (10s), got 1s`},
		},
		{
			name: "max below the default initial",
			raw:  map[string]any{"command": cmd, "backoff": map[string]any{"max": "50ms"}},
			want: []string{`backoff.max: must be at least backoff.initial (100ms), got 50ms`},
		},
		{
			name: "negative max_retries",
			raw:  map[string]any{"command": cmd, "max_retries": -2},
			want: []string{`max_retries: must be within 0..1000000 (leave it out to retry forever), got -2`},
		},
		{
			name: "fractional max_retries",
			raw:  map[string]any{"command": cmd, "max_retries": 1.5},
			want: []string{`max_retries: must be a whole number, got number 1.5`},
		},
		{
			name: "missing environment variable",
			raw:  map[string]any{"command": cmd, "env": map[string]any{"KEY": "${NOPE}"}},
			want: []string{`env.KEY: environment variable NOPE is not set (referenced as ${NOPE}); set it where mcpvisor starts (export NOPE=…), or write the value`},
		},
		{
			name: "transport sse needs a url",
			raw:  map[string]any{"command": cmd, "transport": "sse"},
			want: []string{`transport: "sse" needs url, not command`},
		},
		{
			name: "unknown transport",
			raw:  map[string]any{"url": "http://x", "transport": "websocket"},
			want: []string{`transport: must be "http" (streamable HTTP, the default for url) or "sse", got "websocket"`},
		},
		{
			name: "Claude-style args",
			raw:  map[string]any{"command": []any{"npx"}, "args": []any{"-y", "pkg"}},
			want: []string{`args: unknown field; put the arguments in command, after the program: command = {"npx", "-y", "pkg"}`},
		},
		{
			name: "Claude-style command line as one string, with args",
			raw:  map[string]any{"command": "npx -y", "args": []any{"pkg"}},
			want: []string{
				`args: unknown field; put the arguments in command (see command)`,
				`command: must be a list of the program and its arguments, got string "npx -y"; write command = {"npx", "-y", "pkg"}`,
			},
		},
		{
			name: "Claude-style type",
			raw:  map[string]any{"command": cmd, "type": "stdio"},
			want: []string{`type: unknown field; the transport is set by command or url, or by transport = "sse"`},
		},
		{
			name: "a field that is part of a known one",
			raw:  map[string]any{"command": cmd, "retries": 3},
			want: []string{`retries: unknown field; did you mean "max_retries"?`},
		},
		{
			name: "url without a scheme, shown with its fix, secrets redacted",
			raw:  map[string]any{"url": "user:hunter2@127.0.0.1:9/mcp?token=abc"},
			want: []string{`url: must be an http:// or https:// URL, got "127.0.0.1:9/mcp"; add the scheme: "http://127.0.0.1:9/mcp"`},
		},
		{
			name: "url that does not parse, shown",
			raw:  map[string]any{"url": "127.0.0.1:9/mcp"},
			want: []string{`url: must be an http:// or https:// URL, got "127.0.0.1:9/mcp"; add the scheme: "http://127.0.0.1:9/mcp"`},
		},
		{
			name: "url that is not http, secrets redacted",
			raw:  map[string]any{"url": "ftp://user:hunter2@host/path?token=abc"},
			want: []string{`url: must be an http:// or https:// URL, got "ftp://host/path"`},
		},
		{
			name: "wrong types",
			raw: map[string]any{"command": []any{"x", 3}, "enabled": "yes", "backoff": "fast",
				"headers": "Authorization: x", "max_frame_bytes": 100},
			want: []string{
				`command[2]: must be a string, got number 3`,
				`headers: must be a table of string values like {KEY = "value"}, got string "Authorization: x"`,
				`enabled: must be true or false, got string "yes"`,
				`backoff: must be a table of settings, got string "fast"`,
				`max_frame_bytes: must be within 1024..1073741824, got 100`,
			},
		},
		{
			name: "health timeout not below interval, zero interval, negative idle",
			raw: map[string]any{"command": cmd,
				"timeouts": map[string]any{"health_interval": "5s", "health_timeout": "5s", "keepalive": 0, "idle": "-1s"}},
			want: []string{
				`timeouts.keepalive: must be > 0, got 0`,
				`timeouts.idle: must be > 0, got "-1s"`,
				`timeouts.health_timeout: must be below timeouts.health_interval (5s), got 5s`,
			},
		},
		{
			name: "breaker: true is not a setting, bad counts and typos",
			raw:  map[string]any{"command": cmd, "breaker": map[string]any{"failures": 0, "open_for": "-3s", "windw": "1m"}},
			want: []string{
				`breaker.windw: unknown field; did you mean "window"?`,
				`breaker.failures: 0 is not a setting; leave it out for the default (5)`,
				`breaker.open_for: must be > 0, got "-3s"`,
			},
		},
		{
			name: "breaker = true",
			raw:  map[string]any{"command": cmd, "breaker": true},
			want: []string{`breaker: must be false (to turn it off) or a table like {failures = 5, window = "2m", open_for = "30s"}, got true`},
		},
		{
			name: "empty command",
			raw:  map[string]any{"command": []any{}},
			want: []string{`command: must be a non-empty list of strings like {"prog", "arg"}, got a list`},
		},
		{
			name: "all problems at once",
			raw: map[string]any{"comand": cmd, "url": "http://x", "max_retries": -2,
				"timeouts": map[string]any{"conect": "1s", "request": "10"},
				"backoff":  map[string]any{"jitter": 1.5, "multiplier": 0.5}},
			want: []string{
				`comand: unknown field; did you mean "command"?`,
				`timeouts.conect: unknown field; did you mean "connect"?`,
				`timeouts.request: "10" has no unit; write e.g. "10s" or "10ms", or a number of seconds`,
				`backoff.multiplier: must be within 1..100, got 0.5`,
				`backoff.jitter: must be within 0..1, got 1.5`,
				`max_retries: must be within 0..1000000 (leave it out to retry forever), got -2`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeWithEnv(tt.raw)
			require.ErrorIs(t, err, manager.ErrInvalidConfig)
			want := `server "git": config: ` + tt.want[0]
			if len(tt.want) > 1 {
				want = `server "git": config: ` + strconv.Itoa(len(tt.want)) + ` problems: ` + strings.Join(tt.want, "; ")
			}
			require.EqualError(t, err, want)
		})
	}
}

// Server names: trimmed, no dots, whitespace, control or invisible
// characters, symbols or emoji.
func TestNormalizeName(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "git", want: "git"},
		{in: "  Git\t", want: "Git"},
		{in: "my-server_2", want: "my-server_2"},
		{in: "sérveur", want: "sérveur"},
		{in: strings.Repeat("a", 64), want: strings.Repeat("a", 64)},
		{in: "", wantErr: "server name is empty"},
		{in: " \t ", wantErr: "server name is empty"},
		{in: strings.Repeat("a", 65), wantErr: `server name "` + strings.Repeat("a", 65) + `" is longer than 64 characters`},
		{in: "git.hub", wantErr: `server name "git.hub" contains '.', which separates server and tool names (e.g. "git_hub")`},
		{in: "my server", wantErr: `server name "my server" contains whitespace`},
		{in: "my\u00a0server", wantErr: `server name "my\u00a0server" contains whitespace`}, // %+q escapes it
		{in: "a\x1b[2Jb", wantErr: `server name "a\x1b[2Jb" contains the control or invisible character U+001B; a name must be plain visible text`},
		{in: "git\u200bhub", wantErr: `server name "git\u200bhub" contains the control or invisible character U+200B; a name must be plain visible text`},
		{in: "evil\u202egnp", wantErr: `server name "evil\u202egnp" contains the control or invisible character U+202E; a name must be plain visible text`},
		{in: "nul\x00", wantErr: `server name "nul\x00" contains the control or invisible character U+0000; a name must be plain visible text`},
		{in: "bad\xffutf8", wantErr: `server name "bad\xffutf8" is not valid UTF-8`},
		{in: "rocket🚀", wantErr: `server name "rocket\U0001f680" is not an identifier: use letters, digits, - and _ (symbols, emoji and mixed-direction text are not allowed)`},
		{in: "ＧｉｔＨｕｂ", want: "ＧｉｔＨｕｂ"}, // valid on its own; a look-alike of another name is a conflict
	}
	for _, tt := range tests {
		got, err := manager.NormalizeName(tt.in)
		if tt.wantErr != "" {
			require.EqualError(t, err, tt.wantErr, "NormalizeName(%q)", tt.in)
			continue
		}
		require.NoError(t, err, "NormalizeName(%q)", tt.in)
		require.Equal(t, tt.want, got, "NormalizeName(%q)", tt.in)
	}
}

// Names that read the same are the same key: case, width, composition and
// look-alike letters from other scripts.
func TestNameKeyLookAlikes(t *testing.T) {
	for _, alike := range []string{"GitHub", "GITHUB", "ＧｉｔＨｕｂ", "gıthub", "gіthub" /* Cyrillic і */} {
		require.Equal(t, manager.NameKey("github"), manager.NameKey(alike), "%+q", alike)
	}
	require.Equal(t, manager.NameKey("githu\u0308b"), manager.NameKey("gith\u00fcb"), "NFD and NFC")
	require.NotEqual(t, manager.NameKey("github"), manager.NameKey("gitlab"))
	require.True(t, manager.LookAlike("ＧｉｔＨｕｂ", "github"))
	require.False(t, manager.LookAlike("GitHub", "github"), "case alone is not a look-alike")
}

// FuzzDecodeSpec: whatever shape a declaration has (JSON as Lua tables
// and mcpServers files give it), decoding returns a spec or an
// INVALID_CONFIG error; it never panics, and a decoded spec validates.
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{
		`{"command": ["npx", "-y", "pkg"], "env": {"A": "${HOME}"}}`,
		`{"url": "http://127.0.0.1:9/mcp", "transport": "sse", "headers": {"X": 1}}`,
		`{"command": ["x"], "timeouts": {"connect": "1s", "idle": 0}, "backoff": {"jitter": 0}, "breaker": false}`,
		`{"command": ["x"], "expose": {"prefix": "gh", "hide": ["delete_*"], "rename": {"a": "b"}}, "max_retries": 3}`,
		`{"command": [], "url": 5, "timeouts": "soon"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		s, err := config.DecodeSpec("fuzz", m, config.DecodeOptions{LookupEnv: func(string) (string, bool) { return "v", true }})
		if err != nil {
			require.ErrorIs(t, err, manager.ErrInvalidConfig)
			return
		}
		require.Empty(t, s.Problems())
	})
}

// The auth table is decoded field by field, with ${VAR} in the secret, and
// its mistakes are reported by name.
func TestDecodeAuth(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"SECRET": "s3cret"}[k], k == "SECRET" }
	s, err := config.DecodeSpec("saas", map[string]any{"url": "https://example.com/mcp", "auth": map[string]any{
		"client_id": "abc", "client_secret": "${SECRET}", "scopes": []any{"read", "write"},
		"redirect_port": float64(8765), "client_metadata_url": "https://example.com/client.json",
	}}, config.DecodeOptions{LookupEnv: env})
	require.NoError(t, err)
	require.Equal(t, "abc", s.Auth.ClientID)
	require.Equal(t, "s3cret", s.Auth.ClientSecret)
	require.Equal(t, []string{"read", "write"}, s.Auth.Scopes)
	require.Equal(t, 8765, s.Auth.RedirectPort)
	require.Equal(t, "https://example.com/client.json", s.Auth.ClientMetadataURL)

	for _, tc := range []struct {
		auth map[string]any
		want string
	}{
		{map[string]any{"client_secret": "x"}, "auth.client_secret: needs auth.client_id"},
		{map[string]any{"redirect_port": float64(70000)}, "auth.redirect_port: must be a port number"},
		{map[string]any{"client_metadata_url": "http://example.com/c.json"}, "auth.client_metadata_url: must be an https URL"},
		{map[string]any{"scope": []any{"x"}}, `auth.scope: unknown field; did you mean "scopes"?`},
	} {
		_, err := config.DecodeSpec("saas", map[string]any{"url": "https://example.com/mcp", "auth": tc.auth}, config.DecodeOptions{})
		require.ErrorContains(t, err, tc.want)
	}
	_, err = config.DecodeSpec("local", map[string]any{"command": []any{"x"}, "auth": map[string]any{"client_id": "a"}}, config.DecodeOptions{})
	require.ErrorContains(t, err, "auth: only an http or sse server logs in")
}

func TestDecodeExposeForSearch(t *testing.T) {
	s, err := config.DecodeSpec("gh", map[string]any{"command": []any{"gh-mcp"}, "expose": map[string]any{
		"pin":      []any{"get_*"},
		"describe": map[string]any{"search_issues": "Find issues and pull requests."},
		"tags":     map[string]any{"search_issues": []any{"bugs", "tickets"}},
		"aliases":  map[string]any{"search_issues": "find_bugs"},
	}}, config.DecodeOptions{})
	require.NoError(t, err)
	require.True(t, s.Expose.Pinned("get_me"))
	require.False(t, s.Expose.Pinned("search_issues"))
	require.Equal(t, "Find issues and pull requests.", s.Expose.Describe["search_issues"])
	require.Equal(t, []string{"bugs", "tickets", "find_bugs"}, s.Expose.Words("search_issues"))
}
