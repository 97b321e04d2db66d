package rawhttp

import "io"

// Watch returns body read as it is, byte for byte, by whoever reads the
// returned body (the go-sdk's transport), with each event on the way that
// is a message (no name, or "message") and carries data shown to seen
// first: seen has the event's data before any byte after the event is
// handed on, on the reading goroutine. What counts on seen has counted a
// message before its reader can have decoded anything the server sent
// after it.
//
// Bytes are handed on an event at a time, as they are read. An event over
// max bytes (no bound if max <= 0) ends the watching: it and the rest pass
// unseen, left to the reader's own bound. The body's own end or error is
// the reader's once the bytes before it are.
func Watch(body io.ReadCloser, max int, seen func(data []byte)) io.ReadCloser {
	w := &watched{body: body, seen: seen}
	w.in.r = body
	w.er = newEventReader(&w.in, max)
	return w
}

// watched is the body Watch returns. Read and Close are the body's: one
// reader at a time.
type watched struct {
	body io.ReadCloser
	in   recorder
	er   *eventReader
	seen func(data []byte)
	// out is what has been read and looked at, not yet handed on: the
	// start of in.buf.
	out []byte
	err error // the body's end, once out is handed on
	// plain is set once watching ended: the body's bytes pass as they come.
	plain bool
}

func (w *watched) Read(p []byte) (int, error) {
	for len(w.out) == 0 {
		switch {
		case w.err != nil:
			return 0, w.err
		case w.plain:
			return w.body.Read(p)
		}
		w.next()
	}
	n := copy(p, w.out)
	w.out = w.out[n:]
	return n, nil
}

func (w *watched) Close() error { return w.body.Close() }

// next reads the next event and makes out the bytes up to its end. out
// has been handed on.
func (w *watched) next() {
	handed := len(w.in.buf) - w.in.held
	w.in.buf = w.in.buf[:copy(w.in.buf, w.in.buf[handed:])]
	ev, err := w.er.next()
	if err != nil {
		// Whatever was read goes on; then the body's end, or the body
		// itself when the stream could not be read as events.
		w.out, w.in.held = w.in.buf, 0
		if w.err = w.in.err; w.err == nil {
			w.plain = true
		}
		return
	}
	if ev.name == "" || ev.name == "message" {
		w.seen(ev.data)
	}
	w.in.held = w.er.r.Buffered()
	w.out = w.in.buf[:len(w.in.buf)-w.in.held]
}

// recorder keeps what it reads from r until it is handed on.
type recorder struct {
	r   io.Reader
	buf []byte
	// held is how much of the end of buf the event reader holds unread.
	held int
	err  error // what the last read of r returned, if not nil
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	if err != nil {
		r.err = err
	}
	return n, err
}
