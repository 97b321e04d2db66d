package rawhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// The go-sdk transport's reconnection schedule for a cut stream (not
// exported by it): the first attempt waits reconnectDelay, each later one
// reconnectGrow times longer, at most reconnectMaxDelay, each with a full
// jitter on top; a stream's retry: field replaces the first wait.
const (
	reconnectDelay    = time.Second
	reconnectGrow     = 1.5
	reconnectMaxDelay = 30 * time.Second
	// defaultMaxRetries is the go-sdk transport's MaxRetries when zero.
	defaultMaxRetries = 5
)

// retries is s.MaxRetries as the go-sdk transport reads its own.
func (s Session) retries() int {
	switch {
	case s.MaxRetries == 0:
		return defaultMaxRetries
	case s.MaxRetries < 0:
		return 0
	}
	return s.MaxRetries
}

// backoff is the wait before reconnection attempt n (from 1).
func backoff(n int) time.Duration {
	d := time.Duration(float64(reconnectDelay) * math.Pow(reconnectGrow, float64(n-1)))
	d = min(d, reconnectMaxDelay)
	return d + rand.N(d)
}

// stream reads the response stream of the request with id until its
// answer. A stream that ends (or is cut) first is resumed from the last
// event id it sent, as the go-sdk's transport resumes it: a GET with
// Last-Event-ID, after the stream's retry: delay or the transport's
// backoff, its attempts bounded by MaxRetries, and its resumptions
// without a new event id bounded by MaxRetries too. A stream without event
// ids cannot be resumed: the call fails with ErrNoAnswer. A resumption
// that fails gives the session up (ErrBroken), as the go-sdk does.
func (s Session) stream(ctx, askCtx context.Context, asks *sync.WaitGroup, summary, id string, body io.ReadCloser, p Peer) (json.RawMessage, error) {
	var prevID string
	withoutProgress := 0
	for {
		res, er, err := s.read(askCtx, asks, summary, id, body, p)
		if res != nil || err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if er.lastID == "" {
			return nil, ErrNoAnswer
		}
		if er.lastID != prevID {
			prevID, withoutProgress = er.lastID, 0
		} else if withoutProgress++; withoutProgress > s.retries() {
			return nil, broken(fmt.Errorf("%s: exceeded %d retries without progress (session ID: %v)", summary, s.retries(), s.ID))
		}
		resp, err := s.resume(ctx, er.lastID, er.retry)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, broken(fmt.Errorf("%s: failed to reconnect (session ID: %v): %w", summary, s.ID, err))
		}
		if err := s.check(summary, resp); err != nil {
			drain(resp)
			if errors.Is(err, ErrBroken) || errors.Is(err, ErrSessionMissing) {
				return nil, err
			}
			return nil, broken(err) // the go-sdk gives the session up on any failed resumption
		}
		body = resp.Body
	}
}

// read reads one response stream (body, which it closes) until the
// answer to the request with id, which it returns; or until the stream
// ends, when it returns the reader (its last event id and retry delay)
// and neither answer nor error.
func (s Session) read(askCtx context.Context, asks *sync.WaitGroup, summary, id string, body io.ReadCloser, p Peer) (json.RawMessage, *eventReader, error) {
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
		body.Close()
	}()
	er := newEventReader(body, s.MaxEvent)
	for {
		ev, err := er.next()
		if errors.Is(err, ErrEventTooLarge) {
			return nil, nil, broken(fmt.Errorf("%s: reading the response stream: %w", summary, err))
		}
		if err != nil {
			// Ended or cut: resumed from its last event id, if any.
			return nil, er, nil
		}
		if ev.name != "" && ev.name != "message" {
			continue // not a message
		}
		var m message
		if err := json.Unmarshal(ev.data, &m); err != nil {
			return nil, nil, broken(fmt.Errorf("%s: an event that is not JSON-RPC: %w", summary, err))
		}
		switch {
		case m.Method == "" && string(bytes.TrimSpace(m.ID)) == id:
			res, err := m.answer()
			return res, nil, err
		case m.Method == "":
			// A response to something else: the go-sdk drops it too.
		case len(m.ID) == 0:
			p.Notify(m.Method, m.Params)
		default:
			asks.Add(1)
			go func() {
				defer asks.Done()
				s.answer(askCtx, m, p)
			}()
		}
	}
}

// resume GETs the rest of a cut stream from the event after lastID, as
// the go-sdk's transport reconnects: each attempt after its wait (the
// stream's retry delay if it gave one, else the backoff), again while the
// GET fails to get an answer, at most MaxRetries attempts.
func (s Session) resume(ctx context.Context, lastID string, retry time.Duration) (*http.Response, error) {
	delay := backoff(1)
	if retry > 0 {
		delay = retry
	}
	var last error
	for attempt := 1; attempt <= s.retries(); attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if err != nil {
			return nil, err
		}
		s.headers(req, "")
		req.Header.Set("Last-Event-ID", lastID)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := s.Client.Do(req)
		if err == nil {
			return resp, nil
		}
		last = err
		delay = backoff(attempt + 1)
	}
	if last != nil {
		return nil, fmt.Errorf("connection failed after %d attempts: %w", s.retries(), last)
	}
	return nil, fmt.Errorf("connection aborted after %d attempts", s.retries())
}

// drain reads a little of resp's body, so that its connection can be
// used again, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
