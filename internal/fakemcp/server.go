package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	codeParseError     = -32700
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602

	// defaultProtocolVersion answers clients asking for a version we do not know.
	defaultProtocolVersion = "2025-11-25"
	// invalidUTF8 is spliced into tools/call results with --invalid-utf8.
	invalidUTF8      = "\xff\xfe\xc3("
	invalidUTF8Token = "@@INVALID_UTF8@@"
)

var knownProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// message is any JSON-RPC 2.0 message. A request has Method and ID, a
// notification Method only, a response ID and Result or Error.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type server struct {
	cfg *config

	// outMu guards stdout: every frame is written whole under it.
	// --partial-frame takes it and never gives it back.
	outMu sync.Mutex

	recMu  sync.Mutex
	record *os.File

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc // by compact request id
	handlers sync.WaitGroup

	asks         asks         // --ask: requests to the client awaiting answers
	answered     atomic.Int64 // tools/call responses written
	garbageOnce  sync.Once    // --garbage-stdout=after-init
	partialOnce  sync.Once
	floodStarted atomic.Bool
	discovered   atomic.Int64 // server/discover requests received
}

func newServer(cfg *config) (*server, error) {
	s := &server{cfg: cfg, inflight: map[string]context.CancelCauseFunc{}}
	if cfg.record != "" {
		f, err := os.OpenFile(cfg.record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		s.record = f
	}
	return s, nil
}

// serve reads newline-delimited messages until r ends.
func (s *server) serve(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handleLine(line)
		}
		if err != nil {
			return
		}
	}
}

func (s *server) handleLine(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		s.recordLine("<unparsable>")
		if !s.cfg.hangInitialize {
			s.send(&message{ID: json.RawMessage("null"), Error: &rpcError{codeParseError, "Parse error"}})
		}
		return
	}
	if m.Method == "" {
		s.recordLine("<response id=" + compact(m.ID) + ">")
		s.deliverAnswer(&m) // unexpected ones are ignored
		return
	}
	s.recordMessage(&m)
	if s.cfg.hangInitialize {
		return
	}
	if len(m.ID) == 0 {
		s.handleNotification(&m)
		return
	}

	key := compact(m.ID)
	ctx, cancel := context.WithCancelCause(context.Background())
	s.mu.Lock()
	s.inflight[key] = cancel
	s.mu.Unlock()
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, key)
			s.mu.Unlock()
			cancel(nil)
		}()
		s.handleRequest(ctx, &m)
	}()
}

// Causes of a request's cancellation.
var (
	errPeerCancelled = errors.New("cancelled by notifications/cancelled")
	errShutdown      = errors.New("stdin closed")
)

// cancelledByPeer reports whether the client cancelled the request; such
// requests get no answer. Requests cut short by shutdown (drain) also get no
// answer if they were waiting, but quick ones still answer.
func cancelledByPeer(ctx context.Context) bool {
	return context.Cause(ctx) == errPeerCancelled
}

// drain interrupts every request still waiting (they go unanswered) and waits
// up to timeout for the handlers, so that answers already computed get written.
func (s *server) drain(timeout time.Duration) {
	s.mu.Lock()
	for _, cancel := range s.inflight {
		cancel(errShutdown)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

func (s *server) handleNotification(m *message) {
	switch m.Method {
	case "notifications/initialized":
		if s.cfg.crashAfterN == 0 {
			s.crash()
		}
		if s.cfg.notifyPerSec > 0 && s.floodStarted.CompareAndSwap(false, true) {
			go s.floodNotifications()
		}
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		cancel := s.inflight[compact(p.RequestID)]
		s.mu.Unlock()
		if cancel != nil {
			cancel(errPeerCancelled)
		}
	}
}

// handleRequest answers one request. A request the client cancelled gets no answer.
func (s *server) handleRequest(ctx context.Context, m *message) {
	var (
		result any
		rerr   *rpcError
	)
	switch m.Method {
	case "initialize":
		if !sleep(ctx, s.cfg.slowInitialize) {
			return
		}
		result = s.initialize(m.Params)
	case "ping":
		switch s.cfg.ping {
		case "unsupported":
			rerr = &rpcError{codeMethodNotFound, "Method not found"}
		case "hang":
			<-ctx.Done()
			return
		default:
			result = struct{}{}
		}
	case "server/discover":
		if s.cfg.discover == "" || s.cfg.discover == "off" {
			rerr = &rpcError{codeMethodNotFound, "Method not found"}
			break
		}
		if s.discovered.Add(1) > 1 && s.cfg.discover == "stall" {
			<-ctx.Done()
			return
		}
		result = s.discoverResult()
	case "tools/list":
		result = map[string]any{"tools": s.tools()}
	case "tools/call":
		s.callTool(ctx, m)
		return
	default:
		rerr = &rpcError{codeMethodNotFound, "Method not found"}
	}
	if cancelledByPeer(ctx) {
		return
	}
	s.send(&message{ID: m.ID, Result: result, Error: rerr})
}

// discoverResult answers server/discover: the sessionless generation
// (2026-07-28) and the one before it.
func (s *server) discoverResult() any {
	return map[string]any{
		"supportedVersions": []string{"2026-07-28", defaultProtocolVersion},
		"capabilities":      map[string]any{"tools": map[string]any{}},
		"_meta": map[string]any{
			"io.modelcontextprotocol/serverInfo": map[string]any{"name": s.cfg.name, "version": "0.0.0-fake"},
		},
	}
}

func (s *server) initialize(params json.RawMessage) any {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &p)
	s.asks.mu.Lock()
	s.asks.caps = p.Capabilities
	s.asks.mu.Unlock()
	version := defaultProtocolVersion
	if slices.Contains(knownProtocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	if s.cfg.protocolVersion != "" {
		version = s.cfg.protocolVersion
	}
	caps := map[string]any{"tools": map[string]any{}}
	if s.cfg.notifyPerSec > 0 {
		caps["logging"] = map[string]any{} // the flood is notifications/message
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      map[string]any{"name": s.cfg.name, "version": "0.0.0-fake"},
	}
}

var (
	textSchema = map[string]any{
		"type":       "object",
		"properties": map[string]any{"text": map[string]any{"type": "string", "description": "text to echo"}},
		"required":   []string{"text"},
	}
	msSchema = map[string]any{
		"type":       "object",
		"properties": map[string]any{"ms": map[string]any{"type": "integer", "description": "milliseconds to sleep"}},
		"required":   []string{"ms"},
	}
)

func (s *server) tools() []map[string]any {
	tool := func(name, desc string, schema any) map[string]any {
		return map[string]any{"name": name, "description": desc, "inputSchema": schema}
	}
	list := []map[string]any{
		tool("echo", "Echo text back.", textSchema),
		tool("slow", "Sleep ms milliseconds, then answer.", msSchema),
	}
	for i := range s.cfg.tools {
		list = append(list, tool("t"+strconv.Itoa(i), "Echo text back.", textSchema))
	}
	if s.cfg.ask {
		list = append(list, tool("ask", "Send a request to the client; answer what came back.", askSchema),
			tool("capabilities", "The client's declared capabilities.", map[string]any{"type": "object"}),
			tool("ask_later", "Keep a request to the client for release.", askSchema),
			tool("release", "Send the kept requests; answer at once.", map[string]any{"type": "object"}),
			tool("late_answers", "What came back for released requests.", map[string]any{"type": "object"}))
	}
	if h := s.cfg.hangTool; h != "" && !s.hasTool(h) {
		list = append(list, tool(h, "Never returns.", map[string]any{"type": "object"}))
	}
	return list
}

func (s *server) hasTool(name string) bool {
	if name == "echo" || name == "slow" {
		return true
	}
	n, ok := strings.CutPrefix(name, "t")
	i, err := strconv.Atoi(n)
	return ok && err == nil && i >= 0 && i < s.cfg.tools && strconv.Itoa(i) == n
}

func (s *server) callTool(ctx context.Context, m *message) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
			Ms   int64  `json:"ms"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.answerTool(m.ID, nil, &rpcError{codeInvalidParams, "invalid params: " + err.Error()})
		return
	}
	if s.cfg.partialFrame {
		s.partialOnce.Do(func() {
			s.outMu.Lock() // never unlocked: stdout stalls for good
			os.Stdout.Write([]byte(`{"jsonrpc":"2.0",`))
		})
		<-ctx.Done()
		return
	}
	if !sleep(ctx, s.cfg.slow) {
		return
	}
	if p.Name == s.cfg.hangTool {
		<-ctx.Done()
		return
	}
	if s.cfg.ask && (p.Name == "ask" || p.Name == "capabilities" || p.Name == "ask_later" || p.Name == "release" || p.Name == "late_answers") {
		var raw struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &raw)
		text, ok := s.askTool(ctx, p.Name, raw.Arguments)
		if !ok || cancelledByPeer(ctx) {
			return
		}
		s.answerTool(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}, nil)
		return
	}
	if s.cfg.stderrPerCall > 0 {
		floodStderr(s.cfg.stderrPerCall)
	}

	var text string
	switch {
	case p.Name == "echo" && s.cfg.hugeMessage > 0:
		text = strings.Repeat("x", int(s.cfg.hugeMessage))
	case p.Name == "slow":
		if !sleep(ctx, time.Duration(p.Arguments.Ms)*time.Millisecond) {
			return
		}
		text = fmt.Sprintf("slept %dms", p.Arguments.Ms)
	case s.hasTool(p.Name) && s.cfg.reply != nil:
		text = strings.ReplaceAll(*s.cfg.reply, "{pid}", strconv.Itoa(os.Getpid()))
	case s.hasTool(p.Name):
		text = p.Arguments.Text
	default:
		s.answerTool(m.ID, nil, &rpcError{codeInvalidParams, fmt.Sprintf("unknown tool %q", p.Name)})
		return
	}
	if s.cfg.invalidUTF8 {
		text += invalidUTF8Token
	}
	if cancelledByPeer(ctx) {
		return
	}
	result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
	s.answerTool(m.ID, result, nil)
}

// answerTool writes a tools/call response plus whatever faults go with it,
// then counts it for --crash-after.
func (s *server) answerTool(id json.RawMessage, result any, rerr *rpcError) {
	frame := mustMarshal(&message{ID: id, Result: result, Error: rerr})
	if s.cfg.invalidUTF8 {
		frame = bytes.ReplaceAll(frame, []byte(invalidUTF8Token), []byte(invalidUTF8))
	}
	s.outMu.Lock()
	if s.cfg.unsolicited {
		s.writeLocked(mustMarshal(&message{ID: json.RawMessage("999999"), Result: map[string]any{"content": []any{}}}))
	}
	s.writeLocked(frame)
	if s.cfg.dupResponse {
		s.writeLocked(frame)
	}
	if s.cfg.garbage == "after-init" {
		s.garbageOnce.Do(func() { os.Stdout.Write([]byte("Starting server...\n")) })
	}
	s.outMu.Unlock()
	if n := s.answered.Add(1); s.cfg.crashAfterN > 0 && n == int64(s.cfg.crashAfterN) {
		s.crash()
	}
}

func (s *server) floodNotifications() {
	start := time.Now()
	var sent int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		due := int64(s.cfg.notifyPerSec * time.Since(start).Seconds())
		for ; sent < due; sent++ {
			params := map[string]any{"level": "info", "logger": "fakemcp", "data": "flood " + strconv.FormatInt(sent, 10)}
			raw := mustMarshal(params)
			s.send(&message{Method: "notifications/message", Params: raw})
		}
	}
}

// crash exits with --exit-code, waiting briefly for a frame being written.
func (s *server) crash() {
	deadline := time.Now().Add(time.Second)
	for !s.outMu.TryLock() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "fakemcp: crashing")
	os.Exit(s.cfg.exitCode)
}

func (s *server) send(m *message) {
	frame := mustMarshal(m)
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.writeLocked(frame)
}

// writeLocked writes one frame and its newline; outMu must be held.
func (s *server) writeLocked(frame []byte) {
	os.Stdout.Write(append(frame, '\n'))
	if s.cfg.garbage == "interleaved" {
		os.Stdout.Write([]byte("Starting server...\n"))
	}
}

func (s *server) writeRaw(b []byte) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	os.Stdout.Write(b)
}

func (s *server) recordMessage(m *message) {
	switch {
	case m.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.recordLine(m.Method + " requestId=" + compact(p.RequestID))
	case m.Method == "notifications/progress":
		var p struct {
			Token    json.RawMessage `json:"progressToken"`
			Progress float64         `json:"progress"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.recordLine(fmt.Sprintf("%s progressToken=%s progress=%g", m.Method, compact(p.Token), p.Progress))
	case len(m.ID) > 0:
		s.recordLine(m.Method + " id=" + compact(m.ID))
	default:
		s.recordLine(m.Method)
	}
}

func (s *server) recordLine(line string) {
	if s.record == nil {
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.record.WriteString(line + "\n")
}

func mustMarshal(v any) []byte {
	if m, ok := v.(*message); ok {
		m.JSONRPC = "2.0"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// compact renders a raw JSON id canonically, so 3 and " 3" match.
func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
