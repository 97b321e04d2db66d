//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeModel stands in for the Anthropic Messages API on loopback, so that
// Claude Code can be driven with no model and no internet: it answers
// every POST /v1/messages by a script, in the streamed form (server-sent
// events) when the request asks for it, and keeps every request.
//
// The script sees the text of every tool result the conversation holds,
// in order, and answers with a tool call or, when it returns no tool, a
// final text. Requests that offer none of the scripted client's tools
// (anything Claude Code asks on the side) get a short text.
type fakeModel struct {
	srv *httptest.Server
	// script is the next turn, given the tool results so far.
	script func(results []string) modelTurn
	// ours tells the scripted conversation's requests from the others:
	// the tools they offer include it.
	ours string

	mu       sync.Mutex     // guards requests
	requests []modelRequest // every request, in arrival order
}

// modelTurn is one answer of the script: a call of tool with input, or
// the final text when tool is "".
type modelTurn struct {
	tool  string
	input map[string]any
	text  string
}

// modelRequest is what the fake model keeps of a request.
type modelRequest struct {
	Path     string
	APIKey   string
	Model    string                  `json:"model"`
	Stream   bool                    `json:"stream"`
	Tools    []struct{ Name string } `json:"tools"`
	Messages []struct {
		Role    string
		Content json.RawMessage // a string, or a list of blocks
	} `json:"messages"`
}

// toolNames are the names of the tools a request offers.
func (r modelRequest) toolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// results are the texts of a request's tool results, in order.
func (r modelRequest) results() []string {
	var out []string
	for _, m := range r.Messages {
		var blocks []struct {
			Type    string
			Content json.RawMessage // a string, or a list of text blocks
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, blockText(b.Content))
			}
		}
	}
	return out
}

// blockText is a tool result's content as text: the string, or its text
// blocks joined by newlines.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// newFakeModel serves script on a loopback port until the test ends.
func newFakeModel(t *testing.T, ours string, script func(results []string) modelTurn) *fakeModel {
	f := &fakeModel{script: script, ours: ours}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// scripted is the requests of the scripted conversation.
func (f *fakeModel) scripted() []modelRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []modelRequest
	for _, r := range f.requests {
		if r.offers(f.ours) {
			out = append(out, r)
		}
	}
	return out
}

// offered is the tools each request offered, in arrival order.
func (f *fakeModel) offered() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, r := range f.requests {
		out = append(out, r.toolNames())
	}
	return out
}

// offers reports whether the request offers the model tool.
func (r modelRequest) offers(tool string) bool {
	for _, name := range r.toolNames() {
		if name == tool {
			return true
		}
	}
	return false
}

func (f *fakeModel) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not here"}}`, http.StatusNotFound)
		return
	}
	var r modelRequest
	if err := json.NewDecoder(req.Body).Decode(&r); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	r.Path, r.APIKey = req.URL.Path, req.Header.Get("X-Api-Key")
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, r)
	f.mu.Unlock()

	turn := modelTurn{text: "ok"}
	if r.offers(f.ours) {
		turn = f.script(r.results())
	}
	var block map[string]any
	stop := "end_turn"
	if turn.tool != "" {
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n), "name": turn.tool, "input": turn.input}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": turn.text}
	}
	message := map[string]any{"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": r.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}
	if !r.Stream {
		message["content"], message["stop_reason"] = []any{block}, stop
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(message)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": message})
	if turn.tool != "" {
		input, _ := json.Marshal(turn.input)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": turn.tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": turn.text}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
