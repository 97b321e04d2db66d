package toolsearch

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Limits of a search.
const (
	// DefaultLimit is how many matches a search returns when its Limit is
	// zero.
	DefaultLimit = 10
	// MaxLimit is the most matches a search returns.
	MaxLimit = 50
)

// Options shape a search.
type Options struct {
	// Limit is the most matches returned. If zero or negative,
	// DefaultLimit; above MaxLimit, MaxLimit.
	Limit int
	// Server keeps only the tools of this server (compared without
	// regard to case). If empty, every server's.
	Server string
	// Allow, if not nil, keeps only the tools it returns true for (a
	// toolset's, a client's). It is called on the searching goroutine.
	Allow func(name string) bool
}

// Match is a tool found by a search.
type Match struct {
	Name        string  `json:"name"`
	Server      string  `json:"server"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
	// Why lists the words of the query the tool matched and where.
	Why []Hit `json:"why,omitempty"`
}

// Hit is a word of the query and the fields of a tool it was found in
// (name, tags, server, description, params). A word found only as the
// beginning of a longer one (a prefix) is marked so.
type Hit struct {
	Word   string   `json:"word"`
	Fields []string `json:"fields"`
	Prefix bool     `json:"prefix,omitempty"`
}

// prefixWeight discounts a query word found only as the start of a
// longer word ("screen" in "screenshot").
const prefixWeight = 0.5

// Prefix matching applies to query terms of at least minPrefixLen bytes,
// each expanding to at most maxPrefixTerms index terms and a query to at
// most maxPrefixTotal, which bounds the work a query of many short words
// can cause.
const (
	minPrefixLen   = 3
	maxPrefixTerms = 16
	maxPrefixTotal = 64
)

// Search ranks the tools of s against query with BM25F over their fields
// and returns the best, highest score first, ties in name order. A query
// without a word to look for lists the tools of o.Server in name order,
// and is an error when no server is given.
func (s *Snapshot) Search(query string, o Options) ([]Match, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	server := strings.ToLower(o.Server)
	keep := func(d *doc) bool {
		return (server == "" || d.server == server) && (o.Allow == nil || o.Allow(d.entry.Name))
	}
	terms := parseQuery(query)
	if len(terms) == 0 {
		if server == "" {
			return nil, &Error{Code: CodeEmptyQuery, Op: "search"}
		}
		return s.list(keep, limit), nil
	}

	sc := scorer{s: s, keep: keep, acc: map[*doc]*found{}}
	for i := range numFields {
		if n := len(s.docs); n > 0 {
			sc.avg[i] = float64(s.lenSum[i]) / float64(n)
		}
	}
	total := 0
	for _, t := range terms {
		sc.term(t.key, t.word, 1, false)
		if len(t.key) < minPrefixLen {
			continue
		}
		n := 0
		s.withPrefix(t.key, func(k string) bool {
			if total == maxPrefixTotal {
				return false
			}
			sc.term(k, t.word, prefixWeight, true)
			n++
			total++
			return n < maxPrefixTerms
		})
	}
	ranked := make([]*found, 0, len(sc.acc))
	for _, f := range sc.acc {
		ranked = append(ranked, f)
	}
	slices.SortFunc(ranked, func(a, b *found) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.d.entry.Name, b.d.entry.Name)
	})
	ranked = ranked[:min(limit, len(ranked))]
	out := make([]Match, len(ranked))
	for i, f := range ranked {
		out[i] = f.match()
	}
	return out, nil
}

// list is the tools keep allows, in name order.
func (s *Snapshot) list(keep func(*doc) bool, limit int) []Match {
	var out []Match
	for _, d := range s.docs {
		if keep(d) {
			out = append(out, Match{Name: d.entry.Name, Server: d.entry.Server, Description: d.line})
		}
	}
	slices.SortFunc(out, func(a, b Match) int { return strings.Compare(a.Name, b.Name) })
	return out[:min(limit, len(out))]
}

// scorer adds up the BM25F scores of one search.
type scorer struct {
	s    *Snapshot
	keep func(*doc) bool
	avg  [numFields]float64
	acc  map[*doc]*found
}

// found is a tool that matched, as the search goes.
type found struct {
	d     *doc
	score float64
	hits  []hit
}

// hit is a query word a tool matched: in which fields (a bit each), and
// whether only as a prefix.
type hit struct {
	word       string
	fields     uint8
	prefixOnly bool
}

// term adds what index term key contributes to each tool it occurs in,
// scaled by weight, crediting the query word.
func (sc *scorer) term(key, word string, weight float64, prefix bool) {
	list := sc.s.post[key]
	if len(list) == 0 {
		return
	}
	n, df := float64(len(sc.s.docs)), float64(len(list))
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	for _, p := range list {
		if !sc.keep(p.d) {
			continue
		}
		var tf float64
		var fields uint8
		for f := range numFields {
			if p.tf[f] == 0 {
				continue
			}
			fields |= 1 << f
			norm := 1.0
			if sc.avg[f] > 0 {
				norm = 1 - fieldB[f] + fieldB[f]*float64(p.d.len[f])/sc.avg[f]
			}
			tf += fieldWeight[f] * float64(p.tf[f]) / norm
		}
		fd := sc.acc[p.d]
		if fd == nil {
			fd = &found{d: p.d}
			sc.acc[p.d] = fd
		}
		fd.score += weight * idf * tf * (k1 + 1) / (tf + k1)
		fd.credit(word, fields, prefix)
	}
}

// credit records that word was found in fields.
func (fd *found) credit(word string, fields uint8, prefix bool) {
	for i := range fd.hits {
		if h := &fd.hits[i]; h.word == word {
			h.fields |= fields
			h.prefixOnly = h.prefixOnly && prefix
			return
		}
	}
	fd.hits = append(fd.hits, hit{word: word, fields: fields, prefixOnly: prefix})
}

func (fd *found) match() Match {
	score := math.Round(fd.score*1000) / 1000 // what a model needs, in fewer tokens
	m := Match{Name: fd.d.entry.Name, Server: fd.d.entry.Server, Description: fd.d.line, Score: score}
	for _, h := range fd.hits {
		w := Hit{Word: h.word, Prefix: h.prefixOnly}
		for f := range numFields {
			if h.fields&(1<<f) != 0 {
				w.Fields = append(w.Fields, fieldNames[f])
			}
		}
		m.Why = append(m.Why, w)
	}
	return m
}
