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

// asks holds the server's requests to the client that await an answer.
type asks struct {
	mu      sync.Mutex
	next    int
	waiting map[string]chan *message
	caps    json.RawMessage // the client's capabilities, from initialize
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
