package events

// ring is a fixed-capacity FIFO of events that overwrites its oldest entry
// when full. It is not safe for concurrent use; its owner locks around it.
type ring struct {
	buf  []Event
	head int // index of the oldest event
	n    int // number of events held
}

func newRing(capacity int) ring {
	return ring{buf: make([]Event, capacity)}
}

// push appends e, reporting whether the oldest event was overwritten.
func (r *ring) push(e Event) (dropped bool) {
	if r.n == len(r.buf) {
		r.buf[r.head] = e
		r.head = (r.head + 1) % len(r.buf)
		return true
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	return false
}

// pop removes and returns the oldest event.
func (r *ring) pop() (Event, bool) {
	if r.n == 0 {
		return Event{}, false
	}
	e := r.buf[r.head]
	r.buf[r.head] = Event{} // let the GC have the fields
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return e, true
}

// last returns up to n of the newest events, oldest first. n <= 0 returns
// every event held.
func (r *ring) last(n int) []Event {
	if n > r.n || n <= 0 {
		n = r.n
	}
	out := make([]Event, n)
	start := r.head + r.n - n
	for i := range n {
		out[i] = r.buf[(start+i)%len(r.buf)]
	}
	return out
}
