package manager

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/norm"
)

// NormalizeName trims a server name and checks it: non-empty, at most 64
// characters, valid UTF-8 with no control or invisible format character
// (zero-width spaces, bidi overrides), no dot (the namespace separator),
// no whitespace, and an identifier as PRECIS defines one (letters, digits
// and ASCII punctuation; no symbols or emoji). The result keeps its form
// for display; names are compared by NameKey.
func NormalizeName(name string) (string, error) {
	n := strings.TrimSpace(name)
	if !utf8.ValidString(n) {
		return "", fmt.Errorf("server name %q is not valid UTF-8", n)
	}
	if i := strings.IndexFunc(n, invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(n[i:])
		return "", fmt.Errorf("server name %+q contains the control or invisible character %U; a name must be plain visible text", n, r)
	}
	switch {
	case n == "":
		return "", errors.New("server name is empty")
	case len(n) > 64:
		return "", fmt.Errorf("server name %q is longer than 64 characters", n)
	case strings.Contains(n, "."):
		return "", fmt.Errorf("server name %q contains '.', which separates server and tool names (e.g. %q)", n, strings.ReplaceAll(n, ".", "_"))
	case strings.IndexFunc(n, unicode.IsSpace) >= 0:
		return "", fmt.Errorf("server name %+q contains whitespace", n)
	}
	if _, err := precis.UsernameCasePreserved.String(n); err != nil {
		return "", fmt.Errorf("server name %+q is not an identifier: use letters, digits, - and _ (symbols, emoji and mixed-direction text are not allowed)", n)
	}
	return n, nil
}

// invisible reports a control or format character: what a terminal would
// act on, or what would make two different names look the same.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// folder is the full Unicode case folding; safe for concurrent use.
var folder = cases.Fold()

// NameKey is the form in which server names are compared: two names with
// the same key name the same server, or look so alike that they must not
// both exist. It compares names the way identifiers are compared on the
// web: compatibility-normalized (NFKC: fullwidth "ＧｉｔＨｕｂ" is "GitHub",
// composed and decomposed "ü" are one), case-folded, then reduced to the
// confusable skeleton of Unicode TR39 (dotless "gıthub" and Cyrillic
// "gіthub" are "github").
func NameKey(name string) string {
	return confusables.Skeleton(folder.String(norm.NFKC.String(name)))
}

// LookAlike reports whether two different spellings compare as the same
// name for another reason than case alone: a look-alike.
func LookAlike(a, b string) bool {
	return a != b && !strings.EqualFold(a, b) && NameKey(a) == NameKey(b)
}
