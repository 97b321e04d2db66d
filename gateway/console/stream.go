package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcpvisor/mcpvisor/events"
)

// streamQueue bounds the events a stream holds for a slow browser; one
// that falls behind further gets every row anew.
const streamQueue = 256

// stream serves /ui/stream: server-sent events carrying each server's
// row anew when an event about it is published ("row": {id, html}; html
// empty when the server is gone), and each event ("event": {server,
// kind, html}). It starts with every server's row as it is then.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, s session) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "this connection cannot stream", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	sub := c.opts.Backend.Bus().Subscribe(events.SubscribeOptions{QueueSize: streamQueue})
	defer sub.Close()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Every row as it is now: what changed between the page's rendering
	// and this subscription would otherwise never reach the page.
	var b bytes.Buffer
	b.WriteString("retry: 2000\n\n")
	for _, st := range c.opts.Backend.Statuses() {
		c.writeRow(&b, st.Name, s.csrf)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return
	}
	flusher.Flush()
	for {
		e, err := sub.Recv(ctx)
		if err != nil {
			return // the browser left, the console closed or the bus did
		}
		// Take the whole burst, then send each server's row once.
		dirty, all := map[string]bool{}, false
		var evs []events.Event
		for {
			if e.Kind == events.KindLagged {
				all = true
			} else {
				evs = append(evs, e)
				if e.Server != "" {
					dirty[e.Server] = true
				}
			}
			var more bool
			if e, more, err = sub.TryRecv(); err != nil || !more {
				break
			}
		}
		b.Reset()
		for _, ev := range evs {
			c.writeEvent(&b, ev)
		}
		if all {
			for _, st := range c.opts.Backend.Statuses() {
				dirty[st.Name] = true
			}
		}
		for name := range dirty {
			c.writeRow(&b, name, s.csrf)
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		flusher.Flush()
	}
}

// writeRow adds name's row, rendered now, as a "row" message.
func (c *Console) writeRow(b *bytes.Buffer, name, csrf string) {
	msg := struct {
		ID   string `json:"id"`
		HTML string `json:"html"`
	}{ID: rowID(name)}
	if st, err := c.opts.Backend.Status(name); err == nil {
		var h bytes.Buffer
		if err := c.tmpl.ExecuteTemplate(&h, "row", rowData{Row: c.rowOf(st), CSRF: csrf}); err != nil {
			c.log.Error("console: rendering a row failed", "server", name, "error", err)
			return
		}
		msg.HTML = h.String()
	}
	sse(b, "row", msg)
}

// writeEvent adds e as an "event" message.
func (c *Console) writeEvent(b *bytes.Buffer, e events.Event) {
	var h bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&h, "event", e); err != nil {
		return
	}
	sse(b, "event", struct {
		Server string `json:"server"`
		Kind   string `json:"kind"`
		HTML   string `json:"html"`
	}{e.Server, string(e.Kind), h.String()})
}

// sse adds one message: JSON has no raw newlines, so one data line.
func sse(b *bytes.Buffer, name string, v any) {
	raw, _ := json.Marshal(v)
	fmt.Fprintf(b, "event: %s\ndata: %s\n\n", name, raw)
}
