package luaapi

import (
	"fmt"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// outputBuffer keeps the text of a run up to max bytes and counts what
// it leaves out, so a chunk that prints without end costs no memory.
type outputBuffer struct {
	max     int
	b       strings.Builder
	dropped int
}

func (o *outputBuffer) Write(p []byte) (int, error) {
	o.WriteString(string(p))
	return len(p), nil
}

func (o *outputBuffer) WriteString(s string) {
	room := o.max - o.b.Len()
	if room >= len(s) {
		o.b.WriteString(s)
		return
	}
	cut := max(room, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // never split a character
	}
	o.b.WriteString(s[:cut])
	o.dropped += len(s) - cut
}

// String is the text kept, with a note saying how much was left out.
func (o *outputBuffer) String() string {
	if o.dropped == 0 {
		return o.b.String()
	}
	return fmt.Sprintf("%s\n[output truncated: %d more bytes left out; the limit is %d bytes. Return less: filter or summarise in Lua]", o.b.String(), o.dropped, o.max)
}

// render appends what the chunk returned after what it printed: strings
// as they are, tables as JSON (or, when JSON cannot say them, as Lua),
// other values as tostring says them; one per line.
func (c *chunkRun) render(L *lua.LState, vals []lua.LValue) {
	for _, v := range vals {
		var s string
		switch v := v.(type) {
		case lua.LString:
			s = string(v)
		case *lua.LTable:
			if js, err := EncodeJSON(v); err == nil {
				s = string(js)
			} else {
				s = Pretty(v)
			}
		default:
			s = lua.LVAsString(L.ToStringMeta(v))
		}
		if c.out.b.Len() > 0 && !strings.HasSuffix(c.out.b.String(), "\n") {
			c.out.WriteString("\n")
		}
		c.out.WriteString(s)
	}
}
