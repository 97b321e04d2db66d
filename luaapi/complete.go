package luaapi

import (
	"context"
	"sort"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// maxCandidates caps what [Runtime.Complete] returns.
const maxCandidates = 200

// Complete returns completion candidates for the text before the cursor,
// for the REPL's line editor:
//
//   - a name: global names and Lua keywords ("mcp_st" → "mcp_status");
//   - a dotted or colon path: the fields of the table it reaches
//     ("json.enc" → "json.encode", "string.fo" → "string.format"; after a
//     colon, only functions), following __index tables but never calling
//     Lua code;
//   - inside the first string argument of mcp_call or mcp_call_cb, the
//     full names of tools ("mcp_call(\"de" → "demo.echo"); of mcp_prompt,
//     prompts; of mcp_status, mcp_remove, mcp_wait, mcp_tools and the other
//     functions that take a server first, server names. The mcp.call forms
//     work too.
//
// The semantics are readline.AutoCompleter's Do: pos is the cursor, in
// runes; each suffix is what to append at the cursor for one candidate
// (sorted, deduplicated, at most 200) and length is how many runes before
// the cursor the completed word has. Nothing matches inside comments, other
// strings, or after a closed string.
//
// Names come from the manager; table fields are read on the loop, the only
// goroutine that may touch the Lua state, so Complete waits for the loop,
// up to ctx, and returns nothing if ctx ends first or the runtime is closed.
func (r *Runtime) Complete(ctx context.Context, line string, pos int) (suffixes []string, length int) {
	rs := []rune(line)
	pos = min(max(pos, 0), len(rs))
	c := parseCompletion(string(rs[:pos]))
	var names []string
	switch c.kind {
	case completeNothing:
		return nil, 0
	case completeTools:
		tools, _ := r.toolbox.Tools("")
		for _, t := range tools {
			names = append(names, t.FullName)
		}
	case completePrompts:
		prompts, _ := r.prompts.Prompts("")
		for _, p := range prompts {
			names = append(names, p.FullName)
		}
	case completeServers:
		names = r.observer.Names()
	case completeFields:
		names = r.onLoop(ctx, func() []string { return fieldNames(r.state, c.path, c.colon) })
	}
	return suffixesFor(names, c.word), utf8.RuneCountInString(c.word)
}

// onLoop runs f on the loop and returns its result, or nil if ctx ends or
// the runtime closes first (f may then still run; its result is dropped).
func (r *Runtime) onLoop(ctx context.Context, f func() []string) []string {
	if ctx.Err() != nil {
		return nil // a select with both ready would pick either
	}
	ch := make(chan []string, 1)
	select {
	case r.work <- func() { ch <- f() }:
	case <-r.stop:
		return nil
	case <-ctx.Done():
		return nil
	}
	select {
	case names := <-ch:
		return names
	case <-r.done:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// suffixesFor returns, for the names that extend word, what to append:
// sorted by name, without duplicates, at most maxCandidates. Servers name
// their tools and prompts as they like, so names are matched and offered
// as textsafe.Line shows them: the line editor's list never carries what a
// terminal would act on or hide.
func suffixesFor(names []string, word string) []string {
	var matches []string
	for _, n := range names {
		if n = textsafe.Line(n); strings.HasPrefix(n, word) {
			matches = append(matches, n)
		}
	}
	sort.Strings(matches)
	var out []string
	for i, m := range matches {
		if i > 0 && m == matches[i-1] {
			continue
		}
		if len(out) == maxCandidates {
			break
		}
		out = append(out, m[len(word):])
	}
	return out
}

type completeKind int

const (
	completeNothing completeKind = iota
	completeFields               // a global or a field of a table
	completeTools                // a tool's full name
	completePrompts              // a prompt's full name
	completeServers              // a server name
)

// completion is what the text before the cursor asks to complete.
type completion struct {
	kind  completeKind
	word  string   // the partial name before the cursor
	path  []string // completeFields: the fields leading to the table, from the globals
	colon bool     // completeFields: after "obj:", only methods
}

// nameArgs are the functions whose first argument is a name the manager
// knows, by the kind of that name.
var nameArgs = map[string]completeKind{
	"call":      completeTools,
	"call_cb":   completeTools,
	"prompt":    completePrompts,
	"status":    completeServers,
	"remove":    completeServers,
	"wait":      completeServers,
	"tools":     completeServers,
	"enable":    completeServers,
	"disable":   completeServers,
	"reconnect": completeServers,
	"metrics":   completeServers,
	"discover":  completeServers,
	"resources": completeServers,
	"prompts":   completeServers,
}

// parseCompletion reads the text before the cursor.
func parseCompletion(before string) completion {
	end, quote := scanEnd(before)
	switch end {
	case endInString:
		return stringArgument(before, quote)
	case endInCode:
		return fieldPath(before)
	}
	return completion{}
}

// stringArgument is the completion inside the string opened at quote: a
// name if it is the first argument of one of nameArgs, else nothing.
func stringArgument(before string, quote int) completion {
	word := before[quote+1:]
	if strings.ContainsRune(word, '\\') {
		return completion{}
	}
	i := skipSpaceBack(before, quote)
	if i > 0 && before[i-1] == '(' {
		i = skipSpaceBack(before, i-1)
	} // else the f"name" call form
	j := i
	for j > 0 && (isIdentByte(before[j-1]) || before[j-1] == '.') {
		j--
	}
	fn := before[j:i]
	var kind completeKind
	if rest, ok := strings.CutPrefix(fn, "mcp_"); ok {
		kind = nameArgs[rest]
	} else if rest, ok := strings.CutPrefix(fn, "mcp."); ok {
		kind = nameArgs[rest]
	}
	if kind == completeNothing {
		return completion{}
	}
	return completion{kind: kind, word: word}
}

// fieldPath is the completion of a name or of a dotted or colon path
// ending at the cursor: "pri", "json.enc", "string.", "s:up".
func fieldPath(before string) completion {
	i := identStart(before, len(before))
	word := before[i:]
	c := completion{kind: completeFields, word: word}
	for i > 0 && (before[i-1] == '.' || before[i-1] == ':') {
		sep := before[i-1]
		if sep == ':' && len(c.path) > 0 {
			return completion{} // a colon only ends a path: obj:method
		}
		if sep == '.' && i > 1 && before[i-2] == '.' {
			break // "a..b" concatenates; b is a name of its own
		}
		j := identStart(before, i-1)
		if j == i-1 {
			return completion{} // "f().x", "t[1].x", "'s':x": not a path from the globals
		}
		c.colon = c.colon || sep == ':'
		c.path = append([]string{before[j : i-1]}, c.path...)
		i = j
	}
	for _, seg := range append(c.path, word) {
		if seg != "" && seg[0] >= '0' && seg[0] <= '9' {
			return completion{} // a number such as 1.5
		}
	}
	if word == "" && len(c.path) == 0 {
		return completion{} // nothing typed: every global is no help
	}
	return c
}

// identStart is where the identifier ending at end begins.
func identStart(s string, end int) int {
	i := end
	for i > 0 && isIdentByte(s[i-1]) {
		i--
	}
	return i
}

func skipSpaceBack(s string, i int) int {
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return i
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Where a piece of Lua source ends.
const (
	endInCode   = iota // in code, where a name may be typed
	endInString        // inside a quoted string
	endInOther         // inside a comment or a long string
)

// scanEnd lexes src just enough to tell where it ends; for endInString,
// quote is the index of the opening quote.
func scanEnd(src string) (end, quote int) {
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			if next, ok := skipLongBracket(src, i+2); ok {
				if next < 0 {
					return endInOther, -1
				}
				i = next
				continue
			}
			nl := strings.IndexByte(src[i:], '\n')
			if nl < 0 {
				return endInOther, -1
			}
			i += nl + 1
		case c == '[':
			next, ok := skipLongBracket(src, i)
			switch {
			case !ok:
				i++
			case next < 0:
				return endInOther, -1
			default:
				i = next
			}
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return endInString, i
			}
			i = j + 1
		default:
			i++
		}
	}
	return endInCode, -1
}

// skipLongBracket reports whether a long bracket ([[, [==[) opens at i and
// returns the index after its close, or -1 if it is not closed.
func skipLongBracket(src string, i int) (next int, ok bool) {
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(src) && src[j] == '=' {
		j++
	}
	if j >= len(src) || src[j] != '[' {
		return 0, false
	}
	closing := "]" + strings.Repeat("=", j-i-1) + "]"
	k := strings.Index(src[j+1:], closing)
	if k < 0 {
		return -1, true
	}
	return j + 1 + k + len(closing), true
}

// maxIndexDepth bounds how many __index tables are followed.
const maxIndexDepth = 8

// fieldNames lists the names reachable after path from the globals (the
// globals themselves and the keywords for an empty path). It reads raw
// fields and __index tables only, so no Lua code runs. Loop only.
func fieldNames(L *lua.LState, path []string, colon bool) []string {
	var v lua.LValue = L.G.Global
	for _, seg := range path {
		v = rawIndex(L, v, seg)
		if v == lua.LNil {
			return nil
		}
	}
	var names []string
	if len(path) == 0 {
		for k := range luaKeywords {
			names = append(names, k)
		}
	}
	for _, t := range indexChain(L, v) {
		t.ForEach(func(k, val lua.LValue) {
			s, ok := k.(lua.LString)
			if !ok || !isIdentifier(string(s)) || luaKeywords[string(s)] {
				return
			}
			if _, isFn := val.(*lua.LFunction); colon && !isFn {
				return
			}
			names = append(names, string(s))
		})
	}
	return names
}

// rawIndex is v[key] without metamethods that run code: the raw field of a
// table, else the first __index table in the chain that has it.
func rawIndex(L *lua.LState, v lua.LValue, key string) lua.LValue {
	for _, t := range indexChain(L, v) {
		if x := t.RawGetString(key); x != lua.LNil {
			return x
		}
	}
	return lua.LNil
}

// indexChain is v itself if it is a table, followed by the tables its
// metatables' __index fields lead to.
func indexChain(L *lua.LState, v lua.LValue) []*lua.LTable {
	var chain []*lua.LTable
	if t, ok := v.(*lua.LTable); ok {
		chain = append(chain, t)
	}
	for range maxIndexDepth {
		var mt lua.LValue
		switch x := v.(type) {
		case *lua.LTable:
			mt = x.Metatable
		case *lua.LUserData:
			mt = x.Metatable
		default:
			mt = L.GetMetatable(v)
		}
		mtt, ok := mt.(*lua.LTable)
		if !ok {
			break
		}
		next, ok := mtt.RawGetString("__index").(*lua.LTable)
		if !ok {
			break
		}
		chain = append(chain, next)
		v = next
	}
	return chain
}
