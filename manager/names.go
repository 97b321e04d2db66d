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

// maxItemName bounds the name of a tool or prompt a server lists. The MCP
// specification says 128 characters, but real servers exceed it and the
// gateway serves such tools under a shortened name, so only what no name
// needs is refused.
const maxItemName = 1024

// refusal is an item a server listed that mcpvisor does not take: its
// name could hijack a terminal or pass for another item.
type refusal struct {
	kind, name, reason string
}

// screenNames keeps the items whose names are usable and refuses the
// others: an empty name, invalid UTF-8, a control or invisible format
// character, a name over maxItemName bytes, or a look-alike (NameKey) of
// an item listed before it. Items come sorted, so the same list always
// keeps the same ones.
func screenNames[T any](kind string, items []T, name func(T) string) ([]T, []refusal) {
	var refused []refusal
	seen := make(map[string]string, len(items))
	kept := items[:0:0]
	for _, it := range items {
		n := name(it)
		reason := ""
		switch {
		case n == "":
			reason = "its name is empty"
		case !utf8.ValidString(n):
			reason = "its name is not valid UTF-8"
		case len(n) > maxItemName:
			reason = fmt.Sprintf("its name is %d bytes, over %d", len(n), maxItemName)
		default:
			if i := strings.IndexFunc(n, invisible); i >= 0 {
				r, _ := utf8.DecodeRuneInString(n[i:])
				reason = fmt.Sprintf("its name contains the control or invisible character %U", r)
			} else if prev, dup := seen[NameKey(n)]; dup && prev != n {
				reason = fmt.Sprintf("its name looks like %q, another %s of this server", prev, kind)
			}
		}
		if reason != "" {
			refused = append(refused, refusal{kind: kind, name: n, reason: reason})
			continue
		}
		seen[NameKey(n)] = n
		kept = append(kept, it)
	}
	if len(refused) == 0 {
		return items, nil
	}
	return kept, refused
}

// publishRefused tells what a discovery refused, an event per item.
func (s *supervisor) publishRefused(c *catalog) {
	for _, r := range c.refused {
		s.emit(Refused{Item: r.kind, Name: r.name, Reason: r.reason})
	}
}
