package hud

import (
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// RuneWidth is how many terminal columns r takes: 2 for East Asian wide
// and fullwidth runes, 0 for control characters, combining marks and
// format characters, 1 otherwise (ambiguous-width runes count as 1, as
// terminals outside CJK locales draw them).
func RuneWidth(r rune) int {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0
	case r < 0x7f:
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// Width is how many terminal columns s takes.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += RuneWidth(r)
	}
	return n
}

// Truncate cuts s to at most w columns; a cut string ends in "…".
func Truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := RuneWidth(r)
		if used+rw > w-1 { // keep one column for the ellipsis
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString("…")
	return b.String()
}

// padRight truncates or pads s with spaces to exactly w columns.
func padRight(s string, w int) string {
	s = Truncate(s, w)
	return s + strings.Repeat(" ", max(w-Width(s), 0))
}

// padLeft right-aligns s in w columns (s is never cut).
func padLeft(s string, w int) string {
	return strings.Repeat(" ", max(w-Width(s), 0)) + s
}
