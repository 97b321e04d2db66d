package gateway_test

// Through each of the gateway's endpoints a client sees of a server what
// it sees talking to the server directly: the same script of operations
// runs against the server itself and through /mcp, /servers/NAME/mcp and
// /toolsets/NAME/mcp, over streamable HTTP and over stdio as `mcpvisor
// serve` serves it, by go-sdk clients of both protocol generations, and
// what each observed is compared step by step.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// step is one operation of a script; toolsOnly steps also run on a
// toolset's endpoint, which serves tools and nothing else.
//
// A bridged step is one where the server asks its client the 2025-11-25
// way (a request sent during the call), which a server may not do on
// 2026-07-28: a 2026-07-28 client talking to it directly gets an error,
// while mcpvisor speaks 2025-11-25 with the server and carries the
// question to a 2026-07-28 client as an input request of its call. Every
// client then sees what a 2025-11-25 client sees directly.
type step struct {
	name      string
	toolsOnly bool
	run       func(p *probe) []string
	bridged   bool
}

// subject is a server under test and its script.
type subject struct {
	name  string
	argv  []string
	env   map[string]string
	steps []step
	// refused names the steps whose form the go-sdk client of
	// 2026-07-28 refuses before its handler runs (it checks a form's
	// schema; the 2025-11-25 client here reads forms as they come): for
	// it, only the question as it came is compared.
	refused map[string]bool
	// normal, if set, leaves out of what every step observed what
	// differs for a reason the step cannot see.
	normal func([]string) []string
}

// clientKind is a go-sdk client of one protocol generation on one
// transport.
type clientKind struct {
	name, version, transport string
}

var sameKinds = []clientKind{
	{"2025-11-25 over HTTP", "2025-11-25", "http"},
	{"2025-11-25 over stdio", "2025-11-25", "stdio"},
	{"2026-07-28 over stdio", "2026-07-28", "stdio"},
}

// conformanceSubject is the go-sdk's conformance everything-server.
func conformanceSubject(t *testing.T) subject {
	bin := buildConformanceServer(t)
	return subject{name: "conf", argv: []string{bin}, steps: []step{
		{"tools", true, (*probe).tools, false},
		{"catalogue", false, (*probe).catalogue, false},
		{"call", true, func(p *probe) []string { return p.call("test_simple_text", nil, "") }, false},
		{"error", true, func(p *probe) []string { return p.call("test_error_handling", nil, "") }, false},
		{"complete", false, func(p *probe) []string { return p.complete("test_prompt_with_arguments", "arg1", "a") }, false},
		{"logs during a call", true, func(p *probe) []string {
			return append(p.setLevel("info"), p.call("test_tool_with_logging", nil, "")...)
		}, false},
		{"progress", true, func(p *probe) []string {
			// The tool answers with the progress token it was given. The
			// gateway gives the server a token of its own (its session
			// carries the calls of every client, whose tokens may clash),
			// so the text differs: that difference is left out here.
			out := p.call("test_tool_with_progress", nil, "tok")
			if last := len(out) - 1; last >= 0 && strings.HasPrefix(out[last], "result isError=false ") {
				out[last] = "result isError=false (the server's progress token)"
			}
			return out
		}, false},
		{"form", true, func(p *probe) []string {
			return p.call("test_elicitation", map[string]any{"message": "Who are you?"}, "")
		}, true},
		{"form with defaults", true, func(p *probe) []string { return p.call("test_elicitation_sep1034_defaults", nil, "") }, true},
		{"form with enums", true, func(p *probe) []string { return p.call("test_elicitation_sep1330_enums", nil, "") }, true},
		{"sampling", true, func(p *probe) []string {
			return p.call("test_sampling", map[string]any{"prompt": "Capital of France?"}, "")
		}, true},
	}, refused: map[string]bool{"form with enums": true}}
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
	// elicitation to a client that cannot as a message); the client here
	// declares none, and does not see it directly.
	normal := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			switch {
			case l == "ask roots/list", strings.Contains(l, "Roots updated"):
				continue
			case strings.HasPrefix(l, "tools "):
				l = strings.Replace(l, " trigger-url-elicitation", "", 1)
			}
			out = append(out, l)
		}
		return out
	}
	return subject{name: "everything", argv: spec.Command, env: spec.Env, normal: normal, steps: []step{
		{"tools", true, (*probe).tools, false},
		{"catalogue", false, (*probe).catalogue, false},
		{"call", true, func(p *probe) []string { return p.call("echo", map[string]any{"message": "hi"}, "") }, false},
		{"complete", false, func(p *probe) []string { return p.complete("completable-prompt", "department", "E") }, false},
		{"progress", true, func(p *probe) []string {
			return p.call("trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, "tok")
		}, false},
		{"form", true, func(p *probe) []string { return p.call("trigger-elicitation-request", nil, "") }, false},
		{"sampling", true, func(p *probe) []string {
			return p.call("trigger-sampling-request", map[string]any{"prompt": "Capital of France?", "maxTokens": 20}, "")
		}, false},
		{"roots", true, func(p *probe) []string {
			// The server asks for the roots once per session and keeps
			// them: through the gateway's one session only the first
			// client is asked (every client here has the same roots).
			var out []string
			for _, l := range p.call("get-roots-list", nil, "") {
				if strings.HasPrefix(l, "result ") {
					out = append(out, l)
				}
			}
			return out
		}, false},
		{"cancel", true, func(p *probe) []string {
			return p.cancelled("trigger-long-running-operation", map[string]any{"duration": 30, "steps": 30},
				"echo", map[string]any{"message": "after"})
		}, false},
	}}
}

func TestSameAsDirect(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) subject{conformanceSubject, everythingSubject} {
		s := mk(t)
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			sameAsDirect(t, s)
		})
	}
}

// sameAsDirect runs s's script directly and through every endpoint, for
// every kind of client, and compares.
func sameAsDirect(t *testing.T, s subject) {
	r := newRig(t, map[string]manager.Spec{s.name: {Transport: manager.TransportStdio, Command: s.argv, Env: s.env}}, gateway.HTTPOptions{})
	set := s.name + "-set"
	r.gw.SetToolsets(map[string]gateway.Toolset{set: {Include: []string{s.name + ".*"}}})
	r.wait(s.name)
	prefix := s.name + "__"
	// What each generation of client sees talking to the server itself.
	direct := map[string]map[string][]string{}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("direct "+version, func(t *testing.T) {
			w := &wire{}
			direct[version] = run(connectProbe(t, tappedCommand(t, s.argv, s.env, w), w, version, "", ""), s.steps, false)
		})
	}
	for _, kind := range sameKinds {
		t.Run(kind.name, func(t *testing.T) {
			for _, ep := range []struct {
				name, path, server, toolset, prefix string
				toolsOnly                           bool
			}{
				{"/mcp", "/mcp", "", "", prefix, false},
				{"/servers/NAME/mcp", "/servers/" + s.name + "/mcp", s.name, "", "", false},
				{"/toolsets/NAME/mcp", "/toolsets/" + set + "/mcp", "", set, prefix, true},
			} {
				t.Run(ep.name, func(t *testing.T) {
					w := &wire{}
					tr := tappedHTTP(r.base+ep.path, w)
					if kind.transport == "stdio" {
						tr = r.tappedStdio(t, ep.server, ep.toolset, w)
					}
					got := run(connectProbe(t, tr, w, kind.version, s.name, ep.prefix), s.steps, ep.toolsOnly)
					for _, st := range s.steps {
						if ep.toolsOnly && !st.toolsOnly {
							continue
						}
						want := direct[kind.version][st.name]
						if st.bridged {
							want = direct["2025-11-25"][st.name]
						}
						have := got[st.name]
						if s.normal != nil {
							want, have = s.normal(want), s.normal(have)
						}
						if s.refused[st.name] && kind.version == "2026-07-28" {
							want, have = questionsOf(want), questionsOf(have)
						}
						assert.Equal(t, want, have, "%s", st.name)
					}
				})
			}
		})
	}
}

// run runs steps (only the toolsOnly ones if toolsOnly) and returns what
// each observed.
func run(p *probe, steps []step, toolsOnly bool) map[string][]string {
	out := map[string][]string{}
	for _, st := range steps {
		if toolsOnly && !st.toolsOnly {
			continue
		}
		start := time.Now()
		out[st.name] = st.run(p)
		p.t.Logf("%s (%v): %q", st.name, time.Since(start).Round(time.Millisecond), out[st.name])
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
