package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/manager"
)

var stdio = manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}}

// A server's spec chooses its prefix on /mcp, hides tools from every
// endpoint and renames tools on /mcp; its own endpoint keeps its names.
func TestExposeSpec(t *testing.T) {
	src := newFakeSource(t)
	spec := stdio
	spec.Expose = expose.Rules{Prefix: "gh", Hide: []string{"delete_*"}, Rename: map[string]string{"search_issues": "find"}}
	src.set("github", spec, "search_issues", "delete_repo", "list")
	src.set("plain", stdio, "echo")
	g := newGateway(t, src)

	all := connect(t, g, everything, "")
	all.eventually(t, "gh__find", "gh__list", "plain__echo")
	res, err := all.CallTool(context.Background(), &mcp.CallToolParams{Name: "gh__find"})
	require.NoError(t, err)
	require.Equal(t, "github.search_issues", res.Content[0].(*mcp.TextContent).Text)

	own := connect(t, g, oneServer, "github")
	own.eventually(t, "list", "search_issues")
}

// Tools follow the source, each change announced with list_changed; a
// removed server's tools go, and its endpoint stops listing them.
func TestListsFollowTheSource(t *testing.T) {
	src := newFakeSource(t)
	g := newGateway(t, src)
	all := connect(t, g, everything, "")
	require.Empty(t, all.names(t))

	src.set("git", stdio, "status", "log")
	all.eventually(t, "git__log", "git__status")
	all.announced(t, 1)

	src.remove("git")
	all.eventually(t)
}

// A toolset serves the tools its patterns select, under their /mcp names;
// changing the toolset relists only its endpoint.
func TestToolsets(t *testing.T) {
	src := newFakeSource(t)
	src.set("git", stdio, "status", "log", "push")
	src.set("fs", stdio, "read_file", "write_file")
	g := newGateway(t, src)
	g.SetToolsets(map[string]Toolset{"safe": {Include: []string{"git.*", "fs.read_*"}, Exclude: []string{"git.push"}}})
	safe := connect(t, g, oneToolset, "safe")
	all := connect(t, g, everything, "")
	safe.eventually(t, "fs__read_file", "git__log", "git__status")
	all.eventually(t, "fs__read_file", "fs__write_file", "git__log", "git__push", "git__status")
	before := all.announce.Load() // listed before the client came: nothing to announce

	g.SetToolsets(map[string]Toolset{"safe": {Include: []string{"fs.*"}}})
	safe.eventually(t, "fs__read_file", "fs__write_file")
	// A change /mcp does see, after the toolset's: exactly one more
	// notification arrives, so the toolset change sent none there.
	src.set("new", stdio, "tool")
	all.eventually(t, "fs__read_file", "fs__write_file", "git__log", "git__push", "git__status", "new__tool")
	all.announced(t, before+1)
	require.Equal(t, before+1, all.announce.Load(), "a toolset change was announced on /mcp")
	require.Equal(t, []string{"safe"}, g.Toolsets())
}

// A resolved toolset serves the tools it names that are offered; a
// snapshot older than the one in force is ignored, so the toolset never
// goes back to an earlier answer.
func TestToolsetSnapshots(t *testing.T) {
	src := newFakeSource(t)
	src.set("git", stdio, "status", "log", "push")
	g := newGateway(t, src)
	g.SetToolsets(map[string]Toolset{"picked": {Resolved: true, Tools: []string{"git.log", "git.gone"}, Version: 2}})
	picked := connect(t, g, oneToolset, "picked")
	picked.eventually(t, "git__log")

	// The stale snapshot comes with a new toolset: once that is served,
	// the stale one has been seen too.
	g.SetToolsets(map[string]Toolset{
		"picked": {Resolved: true, Tools: []string{"git.push"}, Version: 1},
		"other":  {Include: []string{"git.status"}, Version: 3},
	})
	connect(t, g, oneToolset, "other").eventually(t, "git__status")
	picked.eventually(t, "git__log")
	require.Equal(t, []string{"other", "picked"}, g.Toolsets())

	g.SetToolsets(map[string]Toolset{"picked": {Resolved: true, Tools: []string{"git.push"}, Version: 4}})
	picked.eventually(t, "git__push")
}
