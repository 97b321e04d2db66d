package textsafe_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// What a terminal would act on is written out; the same text shows the
// same way in a cell and in a block, but for line breaks and tabs.
func TestEscapesWhatATerminalWouldInterpret(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"ESC alone", "a\x1bb", `a\x1bb`},
		{"CSI clear screen", "A\x1b[2JB", `A\x1b[2JB`},
		{"OSC title ended by BEL", "\x1b]0;PWNED\x07", `\x1b]0;PWNED\x07`},
		{"OSC clipboard ended by ST", "\x1b]52;c;aGk=\x1b\\", `\x1b]52;c;aGk=\x1b\`},
		{"other C0 and DEL", "\x00\x08\x0b\x0c\x7f", `\x00\x08\x0b\x0c\x7f`},
		{"C1 controls as runes", "\u0080x\u009b2J\u009d0;t\u009c\u009f", `\u0080x\u009b2J\u009d0;t\u009c\u009f`},
		{"C1 controls as raw bytes", "\x9b2J\x9d", `\x9b2J\x9d`},
		{"invalid UTF-8", "ok\xff\xfe", `ok\xff\xfe`},
		{"bidi embeddings and overrides", "a\u202ab\u202bc\u202cd\u202de\u202ef", `a\u202ab\u202bc\u202cd\u202de\u202ef`},
		{"bidi isolates", "\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"zero-width characters", "git\u200bhub\u200c\u200d\u2060\ufeff", `git\u200bhub\u200c\u200d\u2060\ufeff`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"tag characters beyond the BMP", "x\U000e0041", `x\U000e0041`},
		{"a lone carriage return", "100%\rdone", `100%\rdone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, textsafe.Line(tt.in))
			assert.Equal(t, tt.want, textsafe.Block(tt.in))
		})
	}
}

// Text with nothing to hide comes back unchanged: every script, emoji (with
// their joiners, skin tones and presentation selectors), wide characters,
// combining marks, a real U+FFFD and a backslash.
func TestKeepsVisibleText(t *testing.T) {
	for _, s := range []string{
		"", "plain ASCII: {\"a\": [1, 2]} ~!@#$%^&*()",
		"Grüße, ça va? Ελληνικά, кириллица, עברית, العربية, हिन्दी",
		"全角文字 한국어 日本語", "e\u0301 (a combining accent)",
		"🔥 👍🏽 👩‍💻 👨‍👩‍👧 🏳️‍🌈 ❤️", "\ufffd", `C:\path\x1b`,
	} {
		assert.Equal(t, s, textsafe.Line(s))
		assert.Equal(t, s, textsafe.Block(s))
	}
}

// A block keeps its lines, tabs and CRLF line ends; a one-line cell shows
// them escaped.
func TestLineBreaksAndTabs(t *testing.T) {
	in := "col1\tcol2\r\nline two\n"
	assert.Equal(t, in, textsafe.Block(in))
	assert.Equal(t, `col1\tcol2\r\nline two\n`, textsafe.Line(in))
	assert.Equal(t, `a\rb`+"\n", textsafe.Block("a\rb\n"), "a lone CR could overwrite the line")
	assert.Equal(t, `x\r`, textsafe.Block("x\r"))
}

// Escaping what is already escaped changes nothing, and nothing escaped
// is left for a terminal to act on.
func TestOutputIsInert(t *testing.T) {
	in := "\x1b]0;t\x07\u202e\u200b\x9b\r\n\t👩‍💻"
	for _, f := range []func(string) string{textsafe.Line, textsafe.Block} {
		once := f(in)
		assert.Equal(t, once, f(once))
		assert.False(t, strings.ContainsFunc(once, func(r rune) bool {
			return r != '\n' && r != '\t' && r != '\r' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) && r != '\u200d')
		}), "%q", once)
	}
}

func BenchmarkLineClean(b *testing.B) {
	s := strings.Repeat("server-name.tool_name ", 4)
	b.ReportAllocs()
	for b.Loop() {
		_ = textsafe.Line(s)
	}
}
