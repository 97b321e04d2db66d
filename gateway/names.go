package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/expose"
)

// DefaultNameBudget is the longest exposed tool or prompt name: what
// Claude Desktop and the model APIs accept (^[a-zA-Z0-9_-]{1,64}$).
const DefaultNameBudget = 64

// minNameBudget leaves room for a shortened name: a few characters of the
// original, "_" and the hash suffix.
const minNameBudget = 16

// hashLen is the length of the suffix that tells shortened or colliding
// names apart: 6 hex digits, 24 bits.
const hashLen = 6

// sanitize maps every character outside [a-zA-Z0-9_-] to "_" (one per
// character, not per byte), and "" to "_". It reports whether the result
// differs from s.
func sanitize(s string) (string, bool) {
	if s == "" {
		return "_", true
	}
	var b strings.Builder
	changed := false
	for _, r := range s {
		if expose.Rune(r) {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('_')
		changed = true
	}
	return b.String(), changed
}

// suffix is the deterministic hash of what a name stands for: the server
// and its own name for the item.
func suffix(server, name string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// shorten keeps name within budget: a name that fits is returned as is;
// a longer one keeps its head and ends with "_" and the hash of what it
// stands for, so two long names that share a head stay distinct.
func shorten(name string, budget int, server, orig string) string {
	if len(name) <= budget {
		return name
	}
	return hashed(name, budget, server, orig)
}

// hashed is name with the hash suffix, shortened to fit budget.
func hashed(name string, budget int, server, orig string) string {
	head := budget - hashLen - 1
	if len(name) > head {
		name = name[:head]
	}
	return name + "_" + suffix(server, orig)
}

// itemKey identifies a tool or prompt of a server.
type itemKey struct{ server, name string }

// naming is one item to name: its key, the exposed name's prefix and the
// name to expose after it (its own, unless the server's spec renames it).
type naming struct {
	key    itemKey
	prefix string // sanitized, without the "__" separator
	as     string // if "", key.name
}

// collision is two items that would have had one exposed name.
type collision struct {
	exposed string // the name the first one keeps
	a, b    itemKey
	given   string // the name the second one got instead
}

// namer gives tools (or prompts) names every client accepts:
// prefix__name, sanitized, within the budget. Names are stable: an item
// keeps its name for as long as it is listed, whatever other servers come
// and go, and the same list always gets the same names. Two items whose
// names collide both stay reachable: the one whose own name survived
// sanitizing unchanged (or, failing that, the one named first) keeps the
// plain name and the other gets the hash suffix. A namer is owned by one
// goroutine.
type namer struct {
	budget int
	given  map[itemKey]string // the name each listed item has
	basis  map[itemKey]string // the base name it was given that name for
	owner  map[string]itemKey // the item each given name belongs to
}

func newNamer(budget int) *namer {
	if budget <= 0 {
		budget = DefaultNameBudget
	}
	budget = max(budget, minNameBudget)
	return &namer{budget: budget, given: map[itemKey]string{}, basis: map[itemKey]string{}, owner: map[string]itemKey{}}
}

// base is the name an item would get if nothing collided with it, and
// whether sanitizing changed its own name.
func (n *namer) base(it naming) (string, bool) {
	as := it.as
	if as == "" {
		as = it.key.name
	}
	name, lossy := sanitize(as)
	full := name
	if it.prefix != "" {
		full = it.prefix + "__" + name
	}
	return shorten(full, n.budget, it.key.server, it.key.name), lossy
}

// assign names the current list (in a deterministic order) and forgets
// the items no longer in it. It returns the name of each item and the
// collisions it resolved for the first time.
func (n *namer) assign(items []naming) (map[itemKey]string, []collision) {
	present := make(map[itemKey]bool, len(items))
	for _, it := range items {
		present[it.key] = true
	}
	for k, name := range n.given {
		if !present[k] {
			n.forget(k, name)
		}
	}
	type pending struct {
		it    naming
		name  string
		lossy bool
	}
	var todo []pending
	for _, it := range items {
		name, lossy := n.base(it)
		if old, ok := n.given[it.key]; ok {
			if n.basis[it.key] == name {
				continue // keeps the name it has
			}
			n.forget(it.key, old) // its prefix changed
		}
		todo = append(todo, pending{it, name, lossy})
	}
	// Items whose own name is valid as is claim their plain names first,
	// so that "a_b" keeps "a_b" however late it comes beside "a.b".
	var collisions []collision
	for pass := 0; pass < 2; pass++ {
		for _, p := range todo {
			if p.lossy != (pass == 1) {
				continue
			}
			name := p.name
			if holder, taken := n.owner[name]; taken {
				name = hashed(name, n.budget, p.it.key.server, p.it.key.name)
				collisions = append(collisions, collision{exposed: p.name, a: holder, b: p.it.key, given: name})
				for i := 2; ; i++ { // a hash collision too: astronomically rare, still never fatal
					if _, taken := n.owner[name]; !taken {
						break
					}
					name = hashed(p.name, n.budget, p.it.key.server, p.it.key.name+strings.Repeat("\x00", i))
				}
			}
			n.owner[name] = p.it.key
			n.given[p.it.key] = name
			n.basis[p.it.key] = p.name
		}
	}
	return n.given, collisions
}

func (n *namer) forget(k itemKey, name string) {
	delete(n.given, k)
	delete(n.basis, k)
	delete(n.owner, name)
}
