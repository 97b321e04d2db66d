package gateway_test

// The same-as-direct script run by the TypeScript SDK's client
// (internal/interop/tsprobe.mjs), its observations described as the go-sdk
// probe describes its own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/interop"
	"github.com/mcpvisor/mcpvisor/manager"
)

// tsEvent is one thing the TypeScript client observed.
type tsEvent struct {
	Wire      map[string]any `json:"wire"`
	Sampled   []string       `json:"sampled"`
	Tools     []string       `json:"tools"`
	Catalogue *struct {
		Prompts, Resources, Templates []string
	} `json:"catalogue"`
	Complete  []string `json:"complete"`
	Level     string   `json:"level"`
	Cancelled *bool    `json:"cancelled"`
	Error     *struct {
		Code    *int
		Message string
	} `json:"error"`
}

// runTS runs steps (only the toolsOnly ones if toolsOnly) with the
// TypeScript client connected as conn says, and returns what each step
// observed.
func runTS(t *testing.T, conn map[string]any, steps []step, toolsOnly bool, server, prefix string) map[string][]string {
	t.Helper()
	type planStep struct {
		Name string   `json:"name"`
		Do   []action `json:"do"`
	}
	var plan struct {
		Prefix string     `json:"prefix"`
		Steps  []planStep `json:"steps"`
	}
	plan.Prefix = prefix
	for _, st := range steps {
		if !toolsOnly || st.toolsOnly {
			plan.Steps = append(plan.Steps, planStep{st.name, st.do})
		}
	}
	connJSON, err := json.Marshal(conn)
	require.NoError(t, err)
	planJSON, err := json.Marshal(plan)
	require.NoError(t, err)
	argv := interop.TSProbe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], string(connJSON), string(planJSON))...).Output()
	var o struct {
		Error string
		Steps map[string][]tsEvent
	}
	require.NoError(t, json.Unmarshal(out, &o), "tsprobe output %q (exit: %v)", out, err)
	require.Empty(t, o.Error, "the TypeScript client failed")
	require.NoError(t, err)
	got := map[string][]string{}
	for name, evs := range o.Steps {
		got[name] = tsLines(evs, server, prefix)
		t.Logf("%s: %q", name, got[name])
	}
	return got
}

// tsLines describes a step's events in the go-sdk probe's words: what came
// with a call (up to its response) is described as the probe describes
// what it read off the wire.
func tsLines(evs []tsEvent, server, prefix string) []string {
	var out, sampled []string
	w := &wire{}
	ended := func(last string) {
		out = append(out, w.since(0, server)...)
		out = append(out, sampled...)
		out = append(out, last)
		w, sampled = &wire{}, nil
	}
	for _, e := range evs {
		switch {
		case e.Wire != nil:
			line, err := json.Marshal(e.Wire)
			if err != nil {
				panic(err)
			}
			w.add(line)
			if res, ok := e.Wire["result"].(map[string]any); ok && e.Wire["method"] == nil {
				ended(fmt.Sprintf("result isError=%v %s", res["isError"] == true, strings.ReplaceAll(contentText(res), prefix, "")))
			}
		case e.Sampled != nil:
			sampled = append(sampled, fmt.Sprintf("sampling %q", e.Sampled))
		case e.Tools != nil:
			out = append(out, "tools "+strings.Join(unprefixed(prefix, e.Tools), " "))
		case e.Catalogue != nil:
			var resources []string
			for _, r := range e.Catalogue.Resources {
				if server == "" || !strings.HasPrefix(r, gateway.StatusURI) {
					resources = append(resources, r)
				}
			}
			sort.Strings(resources)
			sort.Strings(e.Catalogue.Templates)
			out = append(out, "prompts "+strings.Join(unprefixed(prefix, e.Catalogue.Prompts), " "),
				"resources "+strings.Join(resources, " "), "templates "+strings.Join(e.Catalogue.Templates, " "))
		case e.Complete != nil:
			out = append(out, fmt.Sprintf("complete %q", e.Complete))
		case e.Level != "":
			out = append(out, "level "+e.Level)
		case e.Cancelled != nil:
			out = append(out, fmt.Sprintf("cancelled: %v", *e.Cancelled))
		case e.Error != nil:
			text := e.Error.Message
			if e.Error.Code != nil {
				text = fmt.Sprintf("code %d", *e.Error.Code)
			}
			w.add([]byte(`{"jsonrpc":"2.0","id":0,"error":{}}`))
			ended("error " + text)
		}
	}
	return out
}

// contentText is a result's text contents, joined.
func contentText(res map[string]any) string {
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if c, ok := c.(map[string]any); ok && c["type"] == "text" {
			parts = append(parts, fmt.Sprint(c["text"]))
		}
	}
	return strings.Join(parts, "\n")
}

// serveEnv is, for the serve-stdio mode, the served server as JSON:
// {"name", "argv", "env", "server", "toolset"} (which endpoint, as serve's
// --server and --toolset choose).
const serveEnv = "MCPVISOR_GATEWAY_TEST_SERVE"

// serveStdioProcess is the test binary as `mcpvisor serve` is: a manager
// keeping one server, a gateway serving it on stdin and stdout until
// stdin ends.
func serveStdioProcess() error {
	var c struct {
		Name, Server, Toolset string
		Argv                  []string
		Env                   map[string]string
	}
	if err := json.Unmarshal([]byte(os.Getenv(serveEnv)), &c); err != nil {
		return err
	}
	m := manager.New(manager.Options{})
	gw := gateway.New(gateway.Options{Source: m, Version: "test"})
	gw.SetToolsets(map[string]gateway.Toolset{c.Name + "-set": {Include: []string{c.Name + ".*"}}})
	if err := m.Add(c.Name, manager.Spec{Transport: manager.TransportStdio, Command: c.Argv, Env: c.Env}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err := m.Wait(ctx, c.Name, manager.StateConnected)
	cancel()
	if err == nil {
		err = gw.ServeStdio(context.Background(), os.Stdin, os.Stdout, c.Server, c.Toolset)
	}
	gw.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(err, m.Close(ctx))
}

// The TypeScript SDK's client (2025-11-25) sees each server through each
// endpoint as it sees it directly: over streamable HTTP, and over stdio
// as `mcpvisor serve` serves it (the test binary, as serve, started by
// the client).
func TestSameAsDirectTypeScript(t *testing.T) {
	t.Parallel()
	interop.TSProbe(t)
	for _, mk := range []func(*testing.T) subject{conformanceSubject, everythingSubject} {
		s := mk(t)
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			r := subjectRig(t, s)
			direct := map[string]map[string][]string{
				"2025-11-25": runTS(t, map[string]any{"command": s.argv, "env": s.env}, s.steps, false, "", ""),
			}
			self, err := os.Executable()
			require.NoError(t, err)
			for _, ep := range endpointsFor(s) {
				t.Run(ep.name+" over HTTP", func(t *testing.T) {
					got := runTS(t, map[string]any{"url": r.base + ep.path}, s.steps, ep.toolsOnly, s.name, ep.prefix)
					compare(t, s, ep, "2025-11-25", direct, got)
				})
				t.Run(ep.name+" over stdio", func(t *testing.T) {
					served, err := json.Marshal(map[string]any{"name": s.name, "argv": s.argv, "env": s.env, "server": ep.server, "toolset": ep.toolset})
					require.NoError(t, err)
					conn := map[string]any{"command": []string{self}, "env": map[string]string{serverEnv: "serve-stdio", serveEnv: string(served)}}
					got := runTS(t, conn, s.steps, ep.toolsOnly, s.name, ep.prefix)
					compare(t, s, ep, "2025-11-25", direct, got)
				})
			}
		})
	}
}
