package main

import (
	"context"
	"strings"
	"time"

	"github.com/chzyer/readline"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// completeTimeout bounds one Tab: completing table fields waits for the Lua
// loop, which may be busy with a hook or a chunk.
const completeTimeout = 200 * time.Millisecond

// completer is the REPL's Tab completion: global names, table fields, and
// tool, prompt and server names inside mcp_* calls (luaapi.Runtime.Complete).
type completer struct {
	rt *luaapi.Runtime
	// off, if set, turns completion off while it says so (a question is
	// being answered: Lua names are no help there).
	off func() bool
}

var _ readline.AutoCompleter = completer{}

// Do implements readline.AutoCompleter. On a blank line, where nothing
// completes, Tab indents as it would without completion.
func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	if c.off != nil && c.off() {
		return nil, 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	suffixes, length := c.rt.Complete(ctx, string(line), pos)
	if len(suffixes) == 0 && strings.TrimSpace(string(line[:min(max(pos, 0), len(line))])) == "" {
		return [][]rune{[]rune("\t")}, 0
	}
	out := make([][]rune, len(suffixes))
	for i, s := range suffixes {
		out[i] = []rune(s)
	}
	return out, length
}
