package gateway

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validName is what Claude Desktop and the model APIs accept.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func items(server string, names ...string) []naming {
	out := make([]naming, len(names))
	for i, n := range names {
		p, _ := sanitize(server)
		out[i] = naming{key: itemKey{server, n}, prefix: p}
	}
	return out
}

func TestNamesAreServerUnderscoreTool(t *testing.T) {
	n := newNamer(0)
	got, coll := n.assign(items("demo", "echo", "add"))
	assert.Equal(t, "demo__echo", got[itemKey{"demo", "echo"}])
	assert.Equal(t, "demo__add", got[itemKey{"demo", "add"}])
	assert.Empty(t, coll)
}

func TestEveryBadCharacterBecomesAValidDistinctName(t *testing.T) {
	odd := []string{"a.b", "a/b", "x y", "c:d", "ünï", "", "t\x00\x1b[2J", strings.Repeat("t", 100), "L" + strings.Repeat("o", 199), "a_b", "a_b_"}
	n := newNamer(0)
	got, _ := n.assign(items("odd server.v2", odd...))
	seen := map[string]string{}
	for _, o := range odd {
		name := got[itemKey{"odd server.v2", o}]
		require.Regexp(t, validName, name, "tool %q", o)
		if prev, dup := seen[name]; dup {
			t.Fatalf("%q and %q both exposed as %q", prev, o, name)
		}
		seen[name] = o
	}
	// A name that was valid as it is keeps its plain form even though a
	// sanitized one would have taken it.
	assert.Equal(t, "odd_server_v2__a_b", got[itemKey{"odd server.v2", "a_b"}])
	assert.Equal(t, "odd_server_v2__x_y", got[itemKey{"odd server.v2", "x y"}], "a lossy name that collides with nothing is not hashed")
}

func TestCollisionsKeepBothAndAreReportedOnce(t *testing.T) {
	n := newNamer(0)
	got, coll := n.assign(items("s", "a.b", "a/b"))
	a, b := got[itemKey{"s", "a.b"}], got[itemKey{"s", "a/b"}]
	assert.NotEqual(t, a, b)
	require.Len(t, coll, 1)
	assert.Equal(t, "s__a_b", coll[0].exposed)
	_, coll = n.assign(items("s", "a.b", "a/b"))
	assert.Empty(t, coll, "an old collision is not announced again")
}

func TestNamesAreStableAsOtherServersComeAndGo(t *testing.T) {
	n := newNamer(0)
	// Server "a_b" offers tool "c"; server "a" offers "b__c": both would be
	// a_b__c. Whoever was listed first keeps the name.
	first, _ := n.assign(items("a", "b__c"))
	keep := first[itemKey{"a", "b__c"}]
	require.Equal(t, "a__b__c", keep)
	both := append(items("a", "b__c"), items("a_b", "c")...)
	got, coll := n.assign(both)
	assert.Equal(t, keep, got[itemKey{"a", "b__c"}], "adding a server renamed an existing tool")
	assert.NotEqual(t, keep, got[itemKey{"a_b", "c"}])
	require.Len(t, coll, 0, "different names, no collision") // a__b__c vs a_b__c
	// Removing and re-adding another server does not move anything.
	again, _ := n.assign(items("a", "b__c"))
	assert.Equal(t, keep, again[itemKey{"a", "b__c"}])
}

func TestCrossServerCollisionFirstComerKeeps(t *testing.T) {
	n := newNamer(0)
	mk := func(server, prefix, name string) naming { return naming{key: itemKey{server, name}, prefix: prefix} }
	got, _ := n.assign([]naming{mk("one", "gh", "issue")})
	require.Equal(t, "gh__issue", got[itemKey{"one", "issue"}])
	// The newcomer comes first in the list (as "aaa" would sort before
	// "one"), yet the tool that had the name keeps it.
	got, coll := n.assign([]naming{mk("aaa", "gh", "issue"), mk("one", "gh", "issue")})
	assert.Equal(t, "gh__issue", got[itemKey{"one", "issue"}])
	assert.Regexp(t, `^gh__issue_[0-9a-f]{6}$`, got[itemKey{"aaa", "issue"}])
	require.Len(t, coll, 1)
	assert.Equal(t, itemKey{"one", "issue"}, coll[0].a)
	assert.Equal(t, itemKey{"aaa", "issue"}, coll[0].b)
}

func TestLongNamesAreShortenedDeterministically(t *testing.T) {
	long1 := strings.Repeat("x", 80) + "1"
	long2 := strings.Repeat("x", 80) + "2"
	a, _ := newNamer(0).assign(items("srv", long1, long2))
	b, _ := newNamer(0).assign(items("srv", long2, long1))
	for _, k := range []itemKey{{"srv", long1}, {"srv", long2}} {
		assert.Len(t, a[k], DefaultNameBudget)
		assert.Equal(t, a[k], b[k], "the same tools got different names in another order")
	}
	assert.NotEqual(t, a[itemKey{"srv", long1}], a[itemKey{"srv", long2}])
}

// Claude Code offers a tool to its model as mcp__<server>__<tool>, and
// the model APIs refuse names over 64 characters: by default every name
// fits behind "mcp__mcpvisor__".
func TestDefaultNamesFitClaudeCodesPrefix(t *testing.T) {
	got, _ := newNamer(0).assign(items("a_server_with_a_long_name", strings.Repeat("t", 100), "short"))
	for k, name := range got {
		assert.LessOrEqual(t, len("mcp__mcpvisor__"+name), 64, "%v is offered as %q", k, name)
	}
}

func TestNameBudgetIsConfigurable(t *testing.T) {
	got, _ := newNamer(32).assign(items("server", strings.Repeat("y", 40)))
	assert.Len(t, got[itemKey{"server", strings.Repeat("y", 40)}], 32)
}

// FuzzNames: whatever servers and tools are named, every exposed name is
// valid, and no two items share one.
func FuzzNames(f *testing.F) {
	f.Add("demo", "echo", "a.b", 64)
	f.Add("ＧｉｔＨｕｂ", "x\x00y", strings.Repeat("z", 300), 20)
	f.Fuzz(func(t *testing.T, server, tool1, tool2 string, budget int) {
		if budget < 0 || budget > 200 {
			return
		}
		n := newNamer(budget)
		its := append(items(server, tool1, tool2), items(server+"x", tool1)...)
		got, _ := n.assign(its)
		limit := n.budget
		seen := map[string]itemKey{}
		for _, it := range its {
			name := got[it.key]
			if !regexp.MustCompile(fmt.Sprintf(`^[a-zA-Z0-9_-]{1,%d}$`, limit)).MatchString(name) {
				t.Fatalf("%v exposed as %q (budget %d)", it.key, name, limit)
			}
			if prev, dup := seen[name]; dup && prev != it.key {
				t.Fatalf("%v and %v share %q", prev, it.key, name)
			}
			seen[name] = it.key
		}
	})
}

// A client that a rule gives a budget of its own is offered every name
// within it, stable from one list to the next, and its calls reach the
// tools the names stand for; other clients keep the gateway's names.
func TestClientBudgets(t *testing.T) {
	src := newFakeSource(t)
	long := "a_rather_long_tool_name_for_testing"
	src.set("server", stdio, long, "short")
	g := newGateway(t, src)
	g.SetClientBudgets([]ClientBudget{{Client: "narrow*", Budget: 20}, {Client: "*", Budget: 30}})

	narrow := connectAs(t, g, everything, "", "narrow-client")
	names := narrow.names(t)
	require.Len(t, names, 2)
	require.Contains(t, names, "server__short")
	for _, n := range names {
		assert.LessOrEqual(t, len(n), 20, n)
		assert.Regexp(t, validName, n)
	}
	assert.Equal(t, names, narrow.names(t), "the same names twice")
	var shortened string
	for _, n := range names {
		if n != "server__short" {
			shortened = n
		}
	}
	res, err := narrow.CallTool(context.Background(), &mcp.CallToolParams{Name: shortened})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Equal(t, "server."+long, res.Content[0].(*mcp.TextContent).Text)

	other := connectAs(t, g, everything, "", "wide-client")
	for _, n := range other.names(t) {
		assert.LessOrEqual(t, len(n), 30, "the first matching rule decides: %s", n)
	}
	g.SetClientBudgets(nil)
	plain := connectAs(t, g, everything, "", "plain-client")
	assert.Contains(t, plain.names(t), "server__"+long, "no rule: the gateway's budget")
	assert.Equal(t, names, narrow.names(t), "a client keeps its budget for its session")
}
