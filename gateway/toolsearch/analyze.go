package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Bounds on what is read of untrusted text: a query comes from a model, a
// description from a server.
const (
	// maxQueryBytes is how much of a query is read.
	maxQueryBytes = 1024
	// maxQueryTerms is how many distinct terms of a query are kept.
	maxQueryTerms = 32
	// maxFieldTerms is how many terms of one field of a tool are indexed.
	maxFieldTerms = 1024
	// maxWordBytes is the longest word kept; longer runs (hashes, base64)
	// never help a search.
	maxWordBytes = 48
)

// term is one analysed word: key is what the index holds (lower-cased,
// stemmed, synonyms made one), word is the word as it was written
// (lower-cased), which is what a match reports.
type term struct {
	key, word string
}

// analyze appends to dst the terms of s, at most max of them. Words are
// runs of letters, digits and marks; a word written in camelCase gives
// its parts too, so that "get_file-contents.v2", "getFileContents" and
// "get file contents" share their terms, and "GitHub" is still "github".
// The parts of a word are credited to the whole word as written. keys, if
// not nil, remembers what normalize made of each word, which spares
// stemming the same words again across the tools of one change.
func analyze(dst []term, s string, max int, keys map[string][]string) []term {
	n := 0
	splitWords(s, func(w string, parts []string) bool {
		if len(w) > maxWordBytes {
			return true
		}
		w = strings.ToLower(w)
		for _, p := range append([]string{w}, parts...) {
			p = strings.ToLower(p)
			ks, ok := keys[p]
			if !ok {
				ks = normalize(p)
				if keys != nil {
					keys[p] = ks
				}
			}
			for _, k := range ks {
				if n >= max {
					return false
				}
				dst = append(dst, term{key: k, word: w})
				n++
			}
		}
		return true
	})
	return dst
}

// splitWords calls yield with each word of s and, when it is written in
// camelCase, its parts, until yield returns false.
func splitWords(s string, yield func(word string, parts []string) bool) {
	start := -1 // byte offset of the current word, -1 between words
	var cuts []int
	var prev rune
	emit := func(end int) bool {
		w := s[start:end]
		var parts []string
		if len(cuts) > 0 && len(w) <= maxWordBytes {
			from := start
			for _, c := range append(cuts, end) {
				parts = append(parts, s[from:c])
				from = c
			}
		}
		start, cuts = -1, cuts[:0]
		return yield(w, parts)
	}
	for i, r := range s {
		if !isWordRune(r) {
			if start >= 0 && !emit(i) {
				return
			}
			prev = 0
			continue
		}
		if start < 0 {
			start = i
		} else if camelBoundary(prev, r, s[i+utf8.RuneLen(r):]) {
			cuts = append(cuts, i)
		}
		prev = r
	}
	if start >= 0 {
		emit(len(s))
	}
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// camelBoundary reports whether a word ends between prev and r: "fileName"
// before N, "HTTPServer" before S, but not "PRs" or "URLs", an acronym's
// plural. Digits stay with their letters (s3, base64, ec2).
func camelBoundary(prev, r rune, rest string) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	if unicode.IsLower(prev) {
		return true
	}
	if !unicode.IsUpper(prev) {
		return false
	}
	next, size := utf8.DecodeRuneInString(rest)
	if next == 's' {
		after, _ := utf8.DecodeRuneInString(rest[size:])
		return unicode.IsLower(after)
	}
	return unicode.IsLower(next)
}

// normalize maps a lower-cased word to its index keys: none for a stop
// word or a lone letter, else its stem, or the stems its synonym stands
// for.
func normalize(w string) []string {
	if english.IsStopWord(w) {
		return nil
	}
	if r, size := utf8.DecodeRuneInString(w); size == len(w) && unicode.IsLetter(r) {
		return nil
	}
	s := stem(w)
	if same, ok := stemSynonyms[s]; ok {
		return same
	}
	return []string{s}
}

// stem is the Snowball (Porter2) stem of an ASCII word, and w itself for
// words of other scripts, which the English stemmer would mangle.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 0x80 || !('a' <= c && c <= 'z') {
			return w
		}
	}
	return english.Stem(w, true)
}

// parseQuery is the distinct terms of a query, in the order written, at
// most maxQueryTerms, read from its first maxQueryBytes.
func parseQuery(q string) []term {
	if len(q) > maxQueryBytes {
		q = q[:maxQueryBytes]
	}
	all := analyze(nil, q, 4*maxQueryTerms, nil)
	out := all[:0]
	seen := make(map[string]bool, len(all))
	for _, t := range all {
		if seen[t.key] {
			continue
		}
		seen[t.key] = true
		out = append(out, t)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}
