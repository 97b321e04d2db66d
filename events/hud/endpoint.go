package hud

import (
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// Endpoint is one of the gateway's endpoints as the HUD shows it: what a
// client there is given to list, in tokens.
type Endpoint struct {
	// Path is the endpoint as shown: "/mcp", "/toolsets/dev".
	Path string
	// Mode is how the endpoint offers its tools unless a client is given
	// another: "direct", "search" or "code".
	Mode string
	// Tokens is what its tools/list costs a model in that mode.
	Tokens int
}

// SetEndpoints records what each of the gateway's endpoints costs, as its
// owner counted them (the count reads the gateway, not events); nil when
// no gateway runs, and then nothing is shown of them.
func (m *Model) SetEndpoints(eps []Endpoint) { m.endpoints = slices.Clone(eps) }

// Endpoints is what SetEndpoints last recorded, for [Layout.Endpoints].
func (m *Model) Endpoints() []Endpoint { return slices.Clone(m.endpoints) }

// endpointLine is the line under the summary that says what each endpoint
// costs in its mode: "/mcp direct 34.5k tok · /toolsets/dev search 473
// tok"; "" for none.
func endpointLine(eps []Endpoint) string {
	parts := make([]string, 0, len(eps))
	for _, e := range eps {
		p := textsafe.Line(e.Path) + " " + textsafe.Line(e.Mode)
		if t := tokenText(e.Tokens); t != "" {
			p += " " + t
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}
