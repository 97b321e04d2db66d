package luaapi

import (
	"fmt"
	"sync/atomic"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// rootList reads a Lua list of roots, each a URI string or {uri = …
// [, name = …]}, and checks every URI (see manager.CheckRoot).
func rootList(t *lua.LTable) ([]*mcp.Root, error) {
	n := t.Len()
	count := 0
	t.ForEach(func(lua.LValue, lua.LValue) { count++ })
	if count != n {
		return nil, fmt.Errorf("roots must be a list, like {\"file:///home/me/project\"}, not a table with named fields")
	}
	roots := make([]*mcp.Root, 0, n)
	seen := map[string]bool{}
	for i := 1; i <= n; i++ {
		root, err := rootEntry(t.RawGetInt(i))
		if err != nil {
			return nil, fmt.Errorf("root %d: %w", i, err)
		}
		if seen[root.URI] {
			return nil, fmt.Errorf("root %d: %q is given twice", i, root.URI)
		}
		seen[root.URI] = true
		roots = append(roots, root)
	}
	return roots, nil
}

// rootEntry reads one root: a URI string or {uri = …, name = …}.
func rootEntry(v lua.LValue) (*mcp.Root, error) {
	root := &mcp.Root{}
	switch x := v.(type) {
	case lua.LString:
		root.URI = string(x)
	case *lua.LTable:
		var bad error
		x.ForEach(func(k, v lua.LValue) {
			s, isString := v.(lua.LString)
			switch key := lua.LVAsString(k); {
			case bad != nil:
			case key != "uri" && key != "name":
				bad = fmt.Errorf("unknown field %s; a root is {uri = \"file:///…\", name = \"…\"}", key)
			case !isString:
				bad = fmt.Errorf("%s must be a string, got %s", key, v.Type())
			case key == "uri":
				root.URI = string(s)
			default:
				root.Name = string(s)
			}
		})
		if bad != nil {
			return nil, bad
		}
		if root.URI == "" {
			return nil, fmt.Errorf("uri is required: {uri = \"file:///…\", name = \"…\"}")
		}
	default:
		return nil, fmt.Errorf("a URI string or {uri = …, name = …} expected, got %s", v.Type())
	}
	if err := manager.CheckRoot(root.URI); err != nil {
		return nil, err
	}
	return root, nil
}

// rootsNotifier tells the manager, from its own goroutine, that the
// host's roots changed: the loop only pokes it and never waits on the
// manager. Pokes made while it is busy coalesce into one more call, which
// is all a change needs (servers ask again for the whole list).
type rootsNotifier struct {
	to    Answering
	poked atomic.Uint64 // pokes so far (tests read it)
	pokes chan struct{} // capacity 1
	stop  <-chan struct{}
	done  chan struct{} // closed when the goroutine has exited
}

func startRootsNotifier(to Answering, stop <-chan struct{}) *rootsNotifier {
	n := &rootsNotifier{to: to, pokes: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go n.run()
	return n
}

// poke asks for one more RootsChanged; it never blocks.
func (n *rootsNotifier) poke() {
	n.poked.Add(1)
	select {
	case n.pokes <- struct{}{}:
	default:
	}
}

func (n *rootsNotifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.pokes:
			n.to.RootsChanged()
		case <-n.stop:
			return
		}
	}
}
