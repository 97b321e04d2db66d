package main

import (
	"fmt"
	"slices"
	"strings"
)

// luaDeclaration is mcp_add(name, raw) as Lua source, for servers taken
// from a client's config into startup.lua. Keys are sorted so the same
// servers always read the same.
func luaDeclaration(name string, raw map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp_add(%s, ", luaString(name))
	writeLua(&b, raw, "")
	b.WriteString(")\n")
	return b.String()
}

func writeLua(b *strings.Builder, v any, indent string) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{\n")
		for _, k := range keys {
			b.WriteString(indent + "  ")
			if isLuaName(k) {
				b.WriteString(k)
			} else {
				b.WriteString("[" + luaString(k) + "]")
			}
			b.WriteString(" = ")
			writeLua(b, v[k], indent+"  ")
			b.WriteString(",\n")
		}
		b.WriteString(indent + "}")
	case []any:
		b.WriteString("{")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLua(b, e, indent)
		}
		b.WriteString("}")
	case []string:
		b.WriteString("{")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(luaString(e))
		}
		b.WriteString("}")
	case string:
		b.WriteString(luaString(v))
	case bool:
		fmt.Fprint(b, v)
	case float64, int, int64:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("nil")
	default:
		b.WriteString(luaString(fmt.Sprint(v)))
	}
}

// luaString quotes s for Lua 5.1, which knows only decimal escapes.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\%03d`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var luaKeywords = []string{"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
	"local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}

func isLuaName(s string) bool {
	if s == "" || slices.Contains(luaKeywords, s) {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
