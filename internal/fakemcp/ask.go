package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// With --ask the server asks its client things, the old way (requests
// from server to client during a call, protocol 2025-11-25 and before):
// tool "ask" {method, params} sends that request and answers with what
// came back, as JSON text: {"result": …} or {"error": {code, message}}.
// Tool "capabilities" answers the capabilities the client declared.
// Tool "ask_later" {method, params} keeps the request for later and
// answers at once; tool "release" sends what was kept, outside the calls
// that asked for it, and answers without waiting; tool "late_answers"
// answers what came back for those, as a JSON list, in the order they
// came.

// asks holds the server's requests to the client that await an answer.
type asks struct {
	mu      sync.Mutex
	next    int
	waiting map[string]chan *message
	caps    json.RawMessage // the client's capabilities, from initialize
	later   []lateAsk       // ask_later's requests, not yet released
	answers []any           // what came back for released requests
}

// lateAsk is a request ask_later keeps.
type lateAsk struct {
	method string
	params json.RawMessage
}

// ask sends one request to the client and waits for its response.
func (s *server) ask(ctx context.Context, method string, params json.RawMessage) (*message, error) {
	s.asks.mu.Lock()
	if s.asks.waiting == nil {
		s.asks.waiting = map[string]chan *message{}
	}
	s.asks.next++
	id := `"ask-` + strconv.Itoa(s.asks.next) + `"`
	ch := make(chan *message, 1)
	s.asks.waiting[id] = ch
	s.asks.mu.Unlock()
	defer func() {
		s.asks.mu.Lock()
		delete(s.asks.waiting, id)
		s.asks.mu.Unlock()
	}()
	s.send(&message{ID: json.RawMessage(id), Method: method, Params: params})
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliverAnswer delivers a response from the client; it reports false if no
// request awaits it.
func (s *server) deliverAnswer(m *message) bool {
	s.asks.mu.Lock()
	ch := s.asks.waiting[compact(m.ID)]
	s.asks.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m
	return true
}

// askTool runs tool "ask" or "capabilities" and returns its text.
func (s *server) askTool(ctx context.Context, name string, args json.RawMessage) (string, bool) {
	switch name {
	case "capabilities":
		s.asks.mu.Lock()
		defer s.asks.mu.Unlock()
		return string(s.asks.caps), true
	case "ask_later":
		var a struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(args, &a)
		s.asks.mu.Lock()
		s.asks.later = append(s.asks.later, lateAsk{a.Method, a.Params})
		s.asks.mu.Unlock()
		return "kept for later", true
	case "release":
		s.asks.mu.Lock()
		later := s.asks.later
		s.asks.later = nil
		s.asks.mu.Unlock()
		for _, l := range later {
			go func() {
				m, err := s.ask(context.Background(), l.method, l.params)
				var answer any = map[string]any{"lost": fmt.Sprint(err)}
				if err == nil {
					answer = map[string]any{"result": m.Result, "error": m.Error}
				}
				s.asks.mu.Lock()
				s.asks.answers = append(s.asks.answers, answer)
				s.asks.mu.Unlock()
			}()
		}
		return fmt.Sprintf("released %d", len(later)), true
	case "late_answers":
		s.asks.mu.Lock()
		defer s.asks.mu.Unlock()
		b, _ := json.Marshal(append([]any{}, s.asks.answers...))
		return string(b), true
	case "ask":
		var a struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(args, &a)
		m, err := s.ask(ctx, a.Method, a.Params)
		if err != nil {
			return "", false
		}
		b, _ := json.Marshal(map[string]any{"result": m.Result, "error": m.Error})
		return string(b), true
	}
	return fmt.Sprintf("unknown ask tool %q", name), true
}

var askSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"method": map[string]any{"type": "string"},
		"params": map[string]any{"type": "object"},
	},
	"required": []string{"method"},
}
