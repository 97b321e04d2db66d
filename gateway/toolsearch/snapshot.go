package toolsearch

import (
	"maps"
	"slices"
	"strings"
)

// posting is one tool a term occurs in, with how often in each field.
type posting struct {
	d  *doc
	tf freqs
}

// Snapshot is the index at one moment. It never changes: an update makes
// a new snapshot that shares with the old every document and every
// posting list it did not touch.
type Snapshot struct {
	docs map[string]*doc
	// post maps a term to the tools it occurs in, in no order.
	post map[string][]posting
	// terms is the keys of post, sorted, for prefix matching.
	terms []string
	// lenSum is the total length of each field over every tool.
	lenSum [numFields]int
}

var empty = &Snapshot{docs: map[string]*doc{}, post: map[string][]posting{}}

// Len is the number of tools in s.
func (s *Snapshot) Len() int { return len(s.docs) }

// Has reports whether s holds a tool named name.
func (s *Snapshot) Has(name string) bool {
	_, ok := s.docs[name]
	return ok
}

// Entry is the entry of the tool named name.
func (s *Snapshot) Entry(name string) (Entry, bool) {
	d, ok := s.docs[name]
	if !ok {
		return Entry{}, false
	}
	return d.entry, true
}

// Servers is the names of the servers whose tools s holds, sorted.
func (s *Snapshot) Servers() []string {
	seen := map[string]bool{}
	for _, d := range s.docs {
		seen[d.entry.Server] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// builder makes the next snapshot from a base, copying a posting list the
// first time a change touches it.
type builder struct {
	base, next *Snapshot
	copied     map[string]bool // terms whose posting list next owns
	added      map[string]bool // terms that are new in next
	removed    map[string]bool // terms that next no longer has
	// keys is what the words of this change's tools normalised to.
	keys map[string][]string
}

func newBuilder(base *Snapshot) *builder {
	return &builder{
		base: base,
		next: &Snapshot{
			docs:   maps.Clone(base.docs),
			post:   maps.Clone(base.post),
			terms:  base.terms,
			lenSum: base.lenSum,
		},
		copied:  map[string]bool{},
		added:   map[string]bool{},
		removed: map[string]bool{},
		keys:    map[string][]string{},
	}
}

func (b *builder) list(t string) []posting {
	l := b.next.post[t]
	if !b.copied[t] {
		l = slices.Clone(l)
		b.copied[t] = true
	}
	return l
}

func (b *builder) remove(name string) {
	d := b.next.docs[name]
	delete(b.next.docs, name)
	for f := range numFields {
		b.next.lenSum[f] -= d.len[f]
	}
	for t := range d.tf {
		l := slices.DeleteFunc(b.list(t), func(p posting) bool { return p.d == d })
		if len(l) == 0 {
			delete(b.next.post, t)
			if b.added[t] {
				delete(b.added, t)
			} else {
				b.removed[t] = true
			}
			continue
		}
		b.next.post[t] = l
	}
}

func (b *builder) add(d *doc) {
	b.next.docs[d.entry.Name] = d
	for f := range numFields {
		b.next.lenSum[f] += d.len[f]
	}
	for t, fr := range d.tf {
		l := b.list(t)
		if len(l) == 0 {
			if b.removed[t] {
				delete(b.removed, t)
			} else {
				b.added[t] = true
			}
		}
		b.next.post[t] = append(l, posting{d: d, tf: fr})
	}
}

// done is the new snapshot, its sorted terms merged from the base's and
// the changes.
func (b *builder) done() *Snapshot {
	if len(b.added) == 0 && len(b.removed) == 0 {
		return b.next
	}
	added := slices.Sorted(maps.Keys(b.added))
	terms := make([]string, 0, len(b.base.terms)+len(added)-len(b.removed))
	old := b.base.terms
	for len(old) > 0 || len(added) > 0 {
		switch {
		case len(added) == 0 || len(old) > 0 && old[0] < added[0]:
			if !b.removed[old[0]] {
				terms = append(terms, old[0])
			}
			old = old[1:]
		default:
			terms = append(terms, added[0])
			added = added[1:]
		}
	}
	b.next.terms = terms
	return b.next
}

// withPrefix calls yield with each term of s that starts with p and is
// longer than p, in order, until it returns false.
func (s *Snapshot) withPrefix(p string, yield func(string) bool) {
	i, _ := slices.BinarySearch(s.terms, p)
	for ; i < len(s.terms) && strings.HasPrefix(s.terms[i], p); i++ {
		if s.terms[i] != p && !yield(s.terms[i]) {
			return
		}
	}
}
