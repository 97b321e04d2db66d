package events

import "slices"

// interest is which kinds the bus's subscribers ask for, rebuilt whenever
// a subscriber comes, goes or changes what it takes passively, and read
// without a lock by [Bus.Wants]. It is immutable once stored.
type interest struct {
	subscribers int          // open subscriptions
	passive     map[Kind]int // how many of them take a kind only passively
}

// wants reports whether some subscriber asks for kind.
func (in *interest) wants(kind Kind) bool {
	return in != nil && in.subscribers > in.passive[kind]
}

// rebuildInterestLocked stores the interest of the current subscribers.
// b.mu must be held.
func (b *Bus) rebuildInterestLocked() {
	in := &interest{subscribers: len(b.subs)}
	for s := range b.subs {
		for _, k := range s.passive {
			if in.passive == nil {
				in.passive = make(map[Kind]int)
			}
			in.passive[k]++
		}
	}
	b.interest.Store(in)
}

// Wants reports whether any subscriber asks for events of kind: one
// subscribed without listing kind as passive. A publisher of a frequent
// kind checks it first, and leaves an event nobody asks for unbuilt and
// unpublished: no allocation, no subscriber woken. It takes no lock and
// allocates nothing.
func (b *Bus) Wants(kind Kind) bool {
	return b.interest.Load().wants(kind)
}

// SetPassive replaces the kinds this subscription takes only passively
// (see [SubscribeOptions.Passive]): a subscriber whose need changes (a Lua
// hook registered for the kind, or its last one removed) says so here.
func (s *Subscription) SetPassive(kinds ...Kind) {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	s.passive = slices.Clone(kinds)
	if _, open := b.subs[s]; open {
		b.rebuildInterestLocked()
	}
}
