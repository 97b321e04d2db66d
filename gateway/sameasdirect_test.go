package gateway_test

// Through each of the gateway's endpoints a client sees of a server what
// it sees talking to the server directly: the same script of operations
// runs against the server itself and through /mcp, /servers/NAME/mcp and
// /toolsets/NAME/mcp, over streamable HTTP and over stdio as `mcpvisor
// serve` serves it, by go-sdk clients of both protocol generations and by
// the TypeScript SDK's client, and what each observed is compared step by
// step. The servers are run over stdio, and (see sameasdirecthttp_test.go)
// over streamable HTTP. The sessionless generation over HTTP has no logging/setLevel: its
// client says the level it wants in each call's _meta.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// action is one thing a client does: list its tools ("tools"), its
// prompts, resources and templates ("catalogue"), call a tool ("call",
// with a progress token if Token is set), complete a prompt's argument
// ("complete"), set its logging level ("setLevel"), or call a tool and
// cancel the call once its first progress came, then call After
// ("cancel"). Names are the server's own: the runner adds what the
// endpoint puts before them.
type action struct {
	Op        string         `json:"op"`
	Tool      string         `json:"tool,omitempty"`
	Args      map[string]any `json:"args,omitempty"`
	Token     string         `json:"token,omitempty"`
	Prompt    string         `json:"prompt,omitempty"`
	Arg       string         `json:"arg,omitempty"`
	Value     string         `json:"value,omitempty"`
	Level     string         `json:"level,omitempty"`
	After     string         `json:"after,omitempty"`
	AfterArgs map[string]any `json:"afterArgs,omitempty"`
}

// step is one part of a script; toolsOnly steps also run on a toolset's
// endpoint, which serves tools and nothing else.
//
// A bridged step is one where the server asks its client something, which
// only a client of one generation gets directly: the generation mcpvisor
// speaks with the server (subject.spoken). Over stdio, and over HTTP
// with sessions, that is 2025-11-25 (the server sends a request during
// the call, which it may not do on 2026-07-28, so a 2026-07-28 client
// talking to it directly gets an error); over sessionless HTTP it is
// 2026-07-28 (the server asks through input requests, and a 2025-11-25
// client, whose request it cannot send to, gets an error). mcpvisor
// carries the question to a client of the other generation, which then
// sees what a client of the spoken generation sees directly.
type step struct {
	name      string
	toolsOnly bool
	bridged   bool
	do        []action
}

// subject is a server under test and its script: a command mcpvisor
// runs over stdio, or a streamable HTTP server at url.
type subject struct {
	// name is the server's name at the gateway; label, if set, names
	// the subject among the tests instead (a longer name would shorten
	// the server's tool names on /mcp, to fit a client's limit).
	name, label string
	argv        []string
	env         map[string]string
	url         string
	steps       []step
	// spoken is the generation mcpvisor speaks with the server; see step.
	spoken string
	// refused names the steps whose form the go-sdk client of
	// 2026-07-28 refuses before its handler runs (it checks a form's
	// schema; the 2025-11-25 client here reads forms as they come): for
	// it, only the question as it came is compared.
	refused map[string]bool
	// normal, if set, leaves out of what every step observed what
	// differs for a reason the step cannot see.
	normal func([]string) []string
}

func calling(tool string, args map[string]any) action {
	return action{Op: "call", Tool: tool, Args: args}
}

// conformanceSubject is the go-sdk's conformance everything-server.
func conformanceSubject(t *testing.T) subject {
	bin := buildConformanceServer(t)
	return subject{name: "conf", argv: []string{bin}, spoken: "2025-11-25", steps: []step{
		{"tools", true, false, []action{{Op: "tools"}}},
		{"catalogue", false, false, []action{{Op: "catalogue"}}},
		{"call", true, false, []action{calling("test_simple_text", nil)}},
		{"error", true, false, []action{calling("test_error_handling", nil)}},
		{"complete", false, false, []action{{Op: "complete", Prompt: "test_prompt_with_arguments", Arg: "arg1", Value: "a"}}},
		{"logs during a call", true, false, []action{{Op: "setLevel", Level: "info"}, calling("test_tool_with_logging", nil)}},
		{"progress", true, false, []action{{Op: "call", Tool: "test_tool_with_progress", Token: "tok"}}},
		{"form", true, true, []action{calling("test_elicitation", map[string]any{"message": "Who are you?"})}},
		{"form with defaults", true, true, []action{calling("test_elicitation_sep1034_defaults", nil)}},
		{"form with enums", true, true, []action{calling("test_elicitation_sep1330_enums", nil)}},
		{"sampling", true, true, []action{calling("test_sampling", map[string]any{"prompt": "Capital of France?"})}},
	}, refused: map[string]bool{"form with enums": true},
		// The progress tool answers with the progress token it was
		// given. The gateway gives the server a token of its own (its
		// session carries the calls of every client, whose tokens may
		// clash), so that text differs: it is left out here.
		normal: func(lines []string) []string {
			for i, l := range lines {
				if l == "result isError=false tok" || strings.HasPrefix(l, "result isError=false mcpvisor-") {
					lines[i] = "result isError=false (the server's progress token)"
				}
			}
			return lines
		}}
}

// everythingSubject is the reference server-everything (skipped unless
// installed; see interop). Its only tool that logs (toggling simulated
// logging) logs at a random level, which decides whether a message comes
// at all: the conformance server's script covers log messages.
func everythingSubject(t *testing.T) subject {
	spec := everythingSpec(t)
	// The server asks its client for the roots once per session, when it
	// likes (at first after initialization): the gateway's session was
	// asked before the client here came, and answered by the first
	// client that made a call. And it offers a tool that asks for a URL
	// when its client can open one, which mcpvisor can (it carries URL
	// elicitation to a client that cannot as a message); the clients
	// here declare none, and do not see it directly. Its form tool
	// answers with the answer's JSON as the server got it: mcpvisor
	// passes the answer on with its fields in another order (sorted) than
	// the TypeScript client wrote them; the values are compared above it.
	normal := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			switch {
			case l == "ask roots/list", strings.Contains(l, "Roots updated"):
				continue
			case strings.HasPrefix(l, "tools "):
				l = strings.Replace(l, " trigger-url-elicitation", "", 1)
			case strings.HasPrefix(l, "result ") && strings.Contains(l, "\n\nRaw result: "):
				l, _, _ = strings.Cut(l, "\n\nRaw result: ")
			}
			out = append(out, l)
		}
		return out
	}
	return subject{name: "everything", argv: spec.Command, env: spec.Env, spoken: "2025-11-25", normal: normal, steps: []step{
		{"tools", true, false, []action{{Op: "tools"}}},
		{"catalogue", false, false, []action{{Op: "catalogue"}}},
		{"call", true, false, []action{calling("echo", map[string]any{"message": "hi"})}},
		{"complete", false, false, []action{{Op: "complete", Prompt: "completable-prompt", Arg: "department", Value: "E"}}},
		{"progress", true, false, []action{{Op: "call", Tool: "trigger-long-running-operation",
			Args: map[string]any{"duration": 0.3, "steps": 3}, Token: "tok"}}},
		{"form", true, false, []action{calling("trigger-elicitation-request", nil)}},
		{"sampling", true, false, []action{calling("trigger-sampling-request", map[string]any{"prompt": "Capital of France?", "maxTokens": 20})}},
		{"roots", true, false, []action{calling("get-roots-list", nil)}},
		{"cancel", true, false, []action{{Op: "cancel", Tool: "trigger-long-running-operation",
			Args: map[string]any{"duration": 30, "steps": 30}, After: "echo", AfterArgs: map[string]any{"message": "after"}}}},
	}}
}

// endpointCase is one of the gateway's endpoints for a subject.
type endpointCase struct {
	name, path, server, toolset, prefix string
	toolsOnly                           bool
}

func endpointsFor(s subject) []endpointCase {
	prefix := s.name + "__"
	return []endpointCase{
		{"/mcp", "/mcp", "", "", prefix, false},
		{"/servers/NAME/mcp", "/servers/" + s.name + "/mcp", s.name, "", "", false},
		{"/toolsets/NAME/mcp", "/toolsets/" + s.name + "-set/mcp", "", s.name + "-set", prefix, true},
	}
}

// subjectRig serves s alone, and a toolset of all its tools.
func subjectRig(t *testing.T, s subject) *rig {
	spec := manager.Spec{Transport: manager.TransportStdio, Command: s.argv, Env: s.env}
	if s.url != "" {
		spec = manager.Spec{Transport: manager.TransportHTTP, URL: s.url}
	}
	r := newRig(t, map[string]manager.Spec{s.name: spec}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{s.name + "-set": {Include: []string{s.name + ".*"}}})
	require.Equal(t, s.spoken, r.wait(s.name).Protocol, "the generation mcpvisor speaks with %s", s.name)
	return r
}

// compare asserts that what a client observed through an endpoint is what
// it observed directly, step by step.
func compare(t *testing.T, s subject, ep endpointCase, version string, direct map[string]map[string][]string, got map[string][]string) {
	t.Helper()
	for _, st := range s.steps {
		if ep.toolsOnly && !st.toolsOnly {
			continue
		}
		want, have := direct[version][st.name], got[st.name]
		if st.bridged {
			want = direct[s.spoken][st.name]
		}
		if s.normal != nil {
			want, have = s.normal(want), s.normal(have)
		}
		if s.refused[st.name] && version == "2026-07-28" {
			want, have = questionsOf(want), questionsOf(have)
		}
		assert.Equal(t, want, have, "%s", st.name)
	}
}

// goKind is a go-sdk client of one protocol generation on one transport.
type goKind struct {
	name, version, transport string
}

var goKinds = []goKind{
	{"2025-11-25 over HTTP", "2025-11-25", "http"},
	{"2025-11-25 over stdio", "2025-11-25", "stdio"},
	{"2026-07-28 over stdio", "2026-07-28", "stdio"},
	{"2026-07-28 over HTTP", "2026-07-28", "http"},
}

func TestSameAsDirect(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) subject{conformanceSubject, everythingSubject,
		conformanceWithSessions, conformanceSessionless, everythingOverHTTP} {
		s := mk(t)
		label := s.name
		if s.label != "" {
			label = s.label
		}
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			sameAsDirect(t, s)
		})
	}
}

// sameAsDirect runs s's script with go-sdk clients directly and through
// every endpoint, and compares.
func sameAsDirect(t *testing.T, s subject) {
	r := subjectRig(t, s)
	// What each generation of client sees talking to the server itself.
	direct := map[string]map[string][]string{}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("direct "+version, func(t *testing.T) {
			w := &wire{}
			tr := tappedHTTP(s.url, w)
			if s.url == "" {
				tr = tappedCommand(t, s.argv, s.env, w)
			}
			direct[version] = runGo(connectProbe(t, tr, w, version, "", ""), s.steps, false)
		})
	}
	// How many calls of each endpoint's script the fast path answered,
	// for a client of each generation over stdio.
	fastOverStdio := map[string]int64{}
	for _, kind := range goKinds {
		t.Run(kind.name, func(t *testing.T) {
			for _, ep := range endpointsFor(s) {
				t.Run(ep.name, func(t *testing.T) {
					r := r
					if abandons(s, kind) {
						r = subjectRig(t, s)
					}
					w := &wire{}
					tr := tappedHTTP(r.base+ep.path, w)
					if kind.transport == "stdio" {
						tr = r.tappedStdio(t, ep.server, ep.toolset, w)
					}
					before := gateway.FastServed(r.gw)
					got := runGo(connectProbe(t, tr, w, kind.version, s.name, ep.prefix), s.steps, ep.toolsOnly)
					compare(t, s, ep, kind.version, direct, got)
					fast := gateway.FastServed(r.gw) - before
					t.Logf("calls the fast path answered: %d", fast)
					// A client without a session takes the fast path no
					// more than one of the same generation over stdio does
					// (over stdio it also takes calls that want progress,
					// and calls on a toolset's endpoint), and takes it
					// where that one does, but on a toolset's endpoint.
					if kind.transport == "stdio" {
						fastOverStdio[kind.version+" "+ep.name] = fast
					} else if most, ok := fastOverStdio[kind.version+" "+ep.name]; ok && kind.version >= "2026-07-28" {
						assert.LessOrEqual(t, fast, most, "calls the fast path answered, at most as over stdio")
						if ep.toolset == "" && most > 0 {
							assert.Positive(t, fast, "calls the fast path answered")
						}
					}
				})
			}
		})
	}
}

// abandons reports whether a client of kind leaves a call of s's script
// waiting for an answer that never comes, and so needs a gateway of its
// own for each endpoint. The sessionless client gives up a call whose
// form it refuses (see subject.refused) without a word: it has no session
// whose end would tell mcpvisor, so the server's call stays parked on its
// question until the session timeout. Meanwhile the server's shared
// session has a call of another client in flight, and mcpvisor cannot
// tell whose call the next client's questions belong to: it asks nobody,
// as it must.
func abandons(s subject, kind goKind) bool {
	return len(s.refused) > 0 && kind.transport == "http" && kind.version >= "2026-07-28"
}

// runGo runs steps (only the toolsOnly ones if toolsOnly) with a go-sdk
// client and returns what each observed.
func runGo(p *probe, steps []step, toolsOnly bool) map[string][]string {
	out := map[string][]string{}
	for _, st := range steps {
		if toolsOnly && !st.toolsOnly {
			continue
		}
		start := time.Now()
		var lines []string
		for _, a := range st.do {
			lines = append(lines, p.do(a)...)
		}
		out[st.name] = lines
		p.t.Logf("%s (%v): %q", st.name, time.Since(start).Round(time.Millisecond), lines)
	}
	return out
}

// questionsOf keeps what a server asked of its client.
func questionsOf(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ask ") {
			out = append(out, l)
		}
	}
	return out
}
