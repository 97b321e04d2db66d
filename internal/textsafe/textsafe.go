package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s ready for a one-line cell (a HUD row, a completion
// candidate, a column of `check`): every control character, tabs and
// newlines included, every invisible format character and every byte of
// invalid UTF-8 becomes a visible escape. It returns s itself when nothing
// needs escaping.
func Line(s string) string { return escape(s, false) }

// Block is Line for text that may span lines, such as a result or an error
// the REPL prints: newlines, tabs and the carriage return of a CRLF line end
// stay as they are; everything else Line escapes is escaped.
func Block(s string) string { return escape(s, true) }

// escape is Line, or Block when block is set.
func escape(s string, block bool) string {
	i := firstUnsafe(s, block)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if hidden(s, i, r, size, block) {
			writeEscape(&b, s[i], r, size)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the byte offset of the first rune escape would rewrite, or
// -1 if there is none.
func firstUnsafe(s string, block bool) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if hidden(s, i, r, size, block) {
			return i
		}
		i += size
	}
	return -1
}

// hidden reports whether the rune r of size bytes at s[i:] must be escaped.
func hidden(s string, i int, r rune, size int, block bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true // not UTF-8
	case r == '\t' || r == '\n':
		return !block
	case r == '\r':
		return !block || !strings.HasPrefix(s[i+1:], "\n")
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x7f:
		return false // printable ASCII, the common case, stays cheap
	case r == zwj:
		return !inEmoji(s, i)
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// zwj is the zero-width joiner.
const zwj = '\u200d'

// inEmoji reports whether the zero-width joiner at s[i:] joins two
// pictographs, as in 👩‍💻: after a symbol (or its skin-tone modifier or
// emoji presentation selector) and before a symbol.
func inEmoji(s string, i int) bool {
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i+len(string(zwj)):])
	pictograph := func(r rune) bool { return unicode.Is(unicode.So, r) }
	return (pictograph(before) || unicode.Is(unicode.Sk, before) || before == '\ufe0f') && pictograph(after)
}

// writeEscape writes the escape for the rune r that s[0] starts: the short
// escapes for tab, newline and carriage return, \xHH for other ASCII
// controls and for bytes that are not UTF-8, \uHHHH or \UHHHHHHHH for the
// rest.
func writeEscape(b *strings.Builder, first byte, r rune, size int) {
	switch {
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < utf8.RuneSelf || r == utf8.RuneError && size == 1:
		b.WriteString(`\x`)
		writeHex(b, uint32(first), 2)
	case r <= 0xffff:
		b.WriteString(`\u`)
		writeHex(b, uint32(r), 4)
	default:
		b.WriteString(`\U`)
		writeHex(b, uint32(r), 8)
	}
}

// writeHex writes v as lower-case hex, zero-padded to digits.
func writeHex(b *strings.Builder, v uint32, digits int) {
	h := strconv.FormatUint(uint64(v), 16)
	b.WriteString(strings.Repeat("0", digits-len(h)))
	b.WriteString(h)
}
