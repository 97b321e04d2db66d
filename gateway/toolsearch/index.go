package toolsearch

import (
	"sync"
	"sync/atomic"
)

// Index is a searchable set of tools. Every change publishes a new
// [Snapshot]; searches read the snapshot published last and never wait
// for a change. The zero value is not usable: make one with New.
type Index struct {
	mu sync.Mutex // mu serialises changes; searches never take it
	// cur is the snapshot published last.
	cur atomic.Pointer[Snapshot]
}

// New is an empty index.
func New() *Index {
	x := &Index{}
	x.cur.Store(empty)
	return x
}

// Snapshot is the index as it is now; it stays the same while the index
// changes.
func (x *Index) Snapshot() *Snapshot { return x.cur.Load() }

// Search is x.Snapshot().Search(query, o).
func (x *Index) Search(query string, o Options) ([]Match, error) {
	return x.Snapshot().Search(query, o)
}

// Add indexes a tool the index does not hold yet.
func (x *Index) Add(e Entry) error {
	return x.change(func(b *builder) error {
		if e.Name == "" {
			return &Error{Code: CodeInvalidEntry, Op: "add"}
		}
		if b.next.Has(e.Name) {
			return &Error{Code: CodeDuplicate, Op: "add", Tool: e.Name}
		}
		b.add(newDoc(e, b.keys))
		return nil
	})
}

// Replace re-indexes a tool the index holds, under the same name.
func (x *Index) Replace(e Entry) error {
	return x.change(func(b *builder) error {
		if !b.next.Has(e.Name) {
			return &Error{Code: CodeNotFound, Op: "replace", Tool: e.Name}
		}
		b.remove(e.Name)
		b.add(newDoc(e, b.keys))
		return nil
	})
}

// Remove drops the tool named name.
func (x *Index) Remove(name string) error {
	return x.change(func(b *builder) error {
		if !b.next.Has(name) {
			return &Error{Code: CodeNotFound, Op: "remove", Tool: name}
		}
		b.remove(name)
		return nil
	})
}

// Sync makes the index hold exactly entries, as one change: tools that are
// gone are removed, new ones added, and only those whose entry differs
// are analysed again. Two entries with one name are an error, and the
// index is left as it was.
func (x *Index) Sync(entries []Entry) error {
	return x.change(func(b *builder) error {
		want := make(map[string]int, len(entries))
		for i, e := range entries {
			if e.Name == "" {
				return &Error{Code: CodeInvalidEntry, Op: "sync"}
			}
			if _, dup := want[e.Name]; dup {
				return &Error{Code: CodeDuplicate, Op: "sync", Tool: e.Name}
			}
			want[e.Name] = i
		}
		for name := range b.base.docs {
			if _, keep := want[name]; !keep {
				b.remove(name)
			}
		}
		for _, e := range entries {
			if d, ok := b.base.docs[e.Name]; ok {
				if equalEntry(d.entry, e) {
					continue
				}
				b.remove(e.Name)
			}
			b.add(newDoc(e, b.keys))
		}
		return nil
	})
}

// change applies fn to a builder on the current snapshot and publishes
// the result, or nothing if fn fails.
func (x *Index) change(fn func(*builder) error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := newBuilder(x.cur.Load())
	if err := fn(b); err != nil {
		return err
	}
	x.cur.Store(b.done())
	return nil
}
