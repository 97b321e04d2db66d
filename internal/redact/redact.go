package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MinLen is the length, in bytes, from which a value is hidden.
const MinLen = 6

// Secrets hides a set of values; see the package doc.
type Secrets struct {
	forms   []string          // every form of every value, longest first
	hide    *strings.Replacer // each form → its value's reference
	drop    *strings.Replacer // each form → ""
	longest int               // the length of the longest form
}

// New returns what hides the given values, by the name of the variable
// each came from (the reference shown in its place is ${NAME}); nil when
// none is long enough to hide.
func New(values map[string]string) *Secrets {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names) // a value two names share is shown as the first
	ref := map[string]string{}
	for _, name := range names {
		for _, f := range forms(values[name]) {
			if _, seen := ref[f]; !seen && len(f) >= MinLen {
				ref[f] = "${" + name + "}"
			}
		}
	}
	if len(ref) == 0 {
		return nil
	}
	s := &Secrets{}
	for f := range ref {
		s.forms = append(s.forms, f)
	}
	// At one position the replacer takes the form listed first: longest
	// first, so that a value is hidden whole rather than a shorter form
	// of it inside (unpadded base64 in padded).
	slices.SortFunc(s.forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	hide := make([]string, 0, 2*len(s.forms))
	drop := make([]string, 0, 2*len(s.forms))
	for _, f := range s.forms {
		hide = append(hide, f, ref[f])
		drop = append(drop, f, "")
	}
	s.hide, s.drop = strings.NewReplacer(hide...), strings.NewReplacer(drop...)
	s.longest = len(s.forms[0])
	return s
}

// forms is v in each encoding it may be printed in.
func forms(v string) []string {
	out := []string{v, jsonInner(v, true), jsonInner(v, false), quoted(v)}
	for _, u := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		out = append(out, u, lowerHex.ReplaceAllStringFunc(u, strings.ToLower))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	return out
}

var lowerHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// jsonInner is v as it is written inside a JSON string, with or without
// HTML characters escaped (Go escapes them, most encoders do not).
func jsonInner(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// quoted is v as it is written inside a Go (or C-like) quoted string.
func quoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

// String returns text with every form of every value replaced by the
// value's reference. In the rare text where a replacement makes a value
// appear again (a value that contains its own reference, or overlapping
// values), the values are deleted instead, and if even that leaves one,
// the text is withheld whole.
func (s *Secrets) String(text string) string {
	if s == nil {
		return text
	}
	out := s.hide.Replace(text)
	if !s.holds(out) {
		return out
	}
	out = s.drop.Replace(out)
	if !s.holds(out) {
		return out
	}
	return "[text withheld: it holds a secret value from the environment]"
}

// holds reports whether text contains a form of a value.
func (s *Secrets) holds(text string) bool {
	for _, f := range s.forms {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// Longest is the length of the longest form of a value: text cut into
// pieces that overlap by Longest()-1 bytes cannot split a value unseen.
// Zero for a nil Secrets.
func (s *Secrets) Longest() int {
	if s == nil {
		return 0
	}
	return s.longest
}
