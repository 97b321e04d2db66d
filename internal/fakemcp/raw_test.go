//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// Raw protocol tests: hand-written JSON-RPC lines against the fake server.

type rawConn struct {
	t *testing.T
	p *proc
	r *bufio.Reader
}

func startRaw(t *testing.T, args ...string) *rawConn {
	p := start(t, args...)
	return &rawConn{t: t, p: p, r: bufio.NewReaderSize(p.stdout, 1<<20)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := c.p.stdin.WriteString(line + "\n"); err != nil {
		c.t.Fatalf("write %s: %v", line, err)
	}
}

func (c *rawConn) request(id int, method, params string) {
	c.t.Helper()
	if params == "" {
		params = "{}"
	}
	c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`)
}

// line reads one line (without the newline); it fails t on timeout.
func (c *rawConn) line(timeout time.Duration) string {
	c.t.Helper()
	s, err := c.tryLine(timeout)
	if err != nil {
		c.t.Fatalf("read line: %v (got %q)", err, s)
	}
	return s
}

func (c *rawConn) tryLine(timeout time.Duration) (string, error) {
	c.p.stdout.SetReadDeadline(time.Now().Add(timeout))
	s, err := c.r.ReadString('\n')
	return strings.TrimSuffix(s, "\n"), err
}

// silent checks that nothing arrives for d.
func (c *rawConn) silent(d time.Duration) {
	c.t.Helper()
	if s, err := c.tryLine(d); !errors.Is(err, os.ErrDeadlineExceeded) || s != "" {
		c.t.Fatalf("want silence, got %q, %v", s, err)
	}
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

func (c *rawConn) response(timeout time.Duration) response {
	c.t.Helper()
	l := c.line(timeout)
	var r response
	if err := json.Unmarshal([]byte(l), &r); err != nil {
		c.t.Fatalf("response %q: %v", l, err)
	}
	return r
}

func (c *rawConn) handshake() {
	c.t.Helper()
	c.request(0, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	if r := c.response(5 * time.Second); r.Error != nil {
		c.t.Fatalf("initialize: %+v", r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func toolText(t *testing.T, r response) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string }
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 {
		t.Fatalf("tool result %s, error %+v", r.Result, r.Error)
	}
	return res.Content[0].Text
}

func TestInitializeVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, asked, want string }{
		{"", "2024-11-05", "2024-11-05"},
		{"", "2025-03-26", "2025-03-26"},
		{"", "2025-06-18", "2025-06-18"},
		{"", "2025-11-25", "2025-11-25"},
		{"", "2026-07-28", "2025-11-25"},
		{"", "bogus", "2025-11-25"},
		{"--protocol-version=1999-01-01", "2025-06-18", "1999-01-01"},
	} {
		t.Run(tc.asked+tc.flag, func(t *testing.T) {
			t.Parallel()
			var args []string
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			c := startRaw(t, args...)
			c.request(1, "initialize", `{"protocolVersion":"`+tc.asked+`"}`)
			var res struct {
				ProtocolVersion string
				ServerInfo      struct{ Name string }
			}
			json.Unmarshal(c.response(5*time.Second).Result, &res)
			if res.ProtocolVersion != tc.want || res.ServerInfo.Name != "fakemcp" {
				t.Errorf("got %+v, want version %s", res, tc.want)
			}
		})
	}
}

func TestMethods(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--tools=3")
	c.handshake()
	for i, tc := range []struct {
		method, params string
		code           int
	}{
		{"server/discover", "", codeMethodNotFound},
		{"resources/list", "", codeMethodNotFound},
		{"tools/call", `{"name":"t3","arguments":{"text":"x"}}`, codeInvalidParams},
		{"ping", "", 0},
	} {
		c.request(i+1, tc.method, tc.params)
		r := c.response(5 * time.Second)
		if string(r.ID) != strconv.Itoa(i+1) {
			t.Errorf("%s: answer for id %s", tc.method, r.ID)
		}
		if code := 0; r.Error != nil {
			code = r.Error.Code
			if code != tc.code {
				t.Errorf("%s: error %+v, want code %d", tc.method, r.Error, tc.code)
			}
		} else if tc.code != 0 {
			t.Errorf("%s: result %s, want error %d", tc.method, r.Result, tc.code)
		}
	}

	c.request(10, "tools/list", "")
	var list struct{ Tools []struct{ Name string } }
	json.Unmarshal(c.response(5*time.Second).Result, &list)
	if len(list.Tools) != 5 || list.Tools[4].Name != "t2" {
		t.Errorf("tools/list = %+v", list)
	}
	c.request(11, "tools/call", `{"name":"t2","arguments":{"text":"via t2"}}`)
	if got := toolText(t, c.response(5*time.Second)); got != "via t2" {
		t.Errorf("t2 = %q", got)
	}
	c.request(12, "tools/call", `{"name":"slow","arguments":{"ms":20}}`)
	if got := toolText(t, c.response(5*time.Second)); got != "slept 20ms" {
		t.Errorf("slow = %q", got)
	}

	c.send(`{"jsonrpc":"2.0", not json`)
	if r := c.response(5 * time.Second); r.Error == nil || r.Error.Code != codeParseError || string(r.ID) != "null" {
		t.Errorf("malformed line answered with %+v", r)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	t.Run("unsupported", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--ping=unsupported")
		c.handshake()
		c.request(1, "ping", "")
		if r := c.response(5 * time.Second); r.Error == nil || r.Error.Code != codeMethodNotFound {
			t.Errorf("ping answered %+v", r)
		}
	})
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		record := filepath.Join(t.TempDir(), "record")
		c := startRaw(t, "--ping=hang", "--record="+record)
		c.handshake()
		c.request(1, "ping", "")
		c.silent(300 * time.Millisecond)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		c.request(2, "tools/list", "")
		if r := c.response(5 * time.Second); string(r.ID) != "2" {
			t.Errorf("got answer for id %s, want 2", r.ID)
		}
		lines := readLines(t, record)
		if want := []string{"initialize id=0", "notifications/initialized", "ping id=1", "notifications/cancelled requestId=1", "tools/list id=2"}; strings.Join(lines, "|") != strings.Join(want, "|") {
			t.Errorf("record = %q, want %q", lines, want)
		}
	})
}

func TestRecordStringIDs(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	c := startRaw(t, "--hang-tool=echo", "--record="+record)
	c.handshake()
	c.send(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"abc","reason":"test"}}`)
	c.silent(200 * time.Millisecond) // a cancelled request gets no answer
	lines := readLines(t, record)
	if got := strings.Join(lines[2:], "|"); got != `tools/call id="abc"|notifications/cancelled requestId="abc"` {
		t.Errorf("record = %q", lines)
	}
}

func TestGarbageStdout(t *testing.T) {
	t.Parallel()
	t.Run("before-init", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--garbage-stdout=before-init")
		if l := c.line(5 * time.Second); l != "Starting server..." {
			t.Errorf("first line %q", l)
		}
		c.handshake()
	})
	t.Run("after-init", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--garbage-stdout=after-init")
		c.handshake()
		c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
		toolText(t, c.response(5*time.Second))
		if l := c.line(5 * time.Second); l != "Starting server..." {
			t.Errorf("line after the first call: %q", l)
		}
		c.request(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
		toolText(t, c.response(5*time.Second)) // only once
	})
	t.Run("interleaved", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--garbage-stdout=interleaved")
		c.handshake()
		if l := c.line(5 * time.Second); l != "Starting server..." {
			t.Errorf("line after initialize: %q", l)
		}
		c.request(1, "ping", "")
		c.response(5 * time.Second)
		if l := c.line(5 * time.Second); l != "Starting server..." {
			t.Errorf("line after ping: %q", l)
		}
	})
}

func TestHugeMessage(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--huge-message=1MiB")
	c.handshake()
	c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	if got := toolText(t, c.response(5*time.Second)); len(got) != 1<<20 {
		t.Errorf("echo returned %d bytes, want 1 MiB", len(got))
	}
}

func TestPartialFrame(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--partial-frame")
	c.handshake()
	c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	s, err := c.tryLine(500 * time.Millisecond)
	if s != `{"jsonrpc":"2.0",` || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("got %q, %v; want the partial frame and a stall", s, err)
	}
	c.request(2, "ping", "")
	c.silent(300 * time.Millisecond)
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--invalid-utf8")
	c.handshake()
	c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	if l := c.line(5 * time.Second); utf8.ValidString(l) || !strings.Contains(l, "\xff") {
		t.Errorf("line %q is valid UTF-8", l)
	}
}

func TestDupAndUnsolicitedResponses(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--dup-response-id", "--unsolicited-response")
	c.handshake()
	c.request(5, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	var ids []string
	for range 3 {
		ids = append(ids, string(c.response(5*time.Second).ID))
	}
	if got := strings.Join(ids, ","); got != "999999,5,5" {
		t.Errorf("response ids %s, want 999999,5,5", got)
	}
}

func TestNotificationFlood(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--notification-flood=1k/s")
	c.handshake()
	for i := range 100 {
		if r := c.response(5 * time.Second); r.Method != "notifications/message" {
			t.Fatalf("message %d: %+v", i, r)
		}
	}
}

func TestSlow(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--slow=200ms")
	c.handshake()
	begin := time.Now()
	c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	toolText(t, c.response(5*time.Second))
	if d := time.Since(begin); d < 200*time.Millisecond {
		t.Errorf("answered after %v, want >= 200ms", d)
	}
}

func TestSlowInitialize(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--slow-initialize=200ms")
	begin := time.Now()
	c.handshake()
	if d := time.Since(begin); d < 200*time.Millisecond {
		t.Errorf("initialize answered after %v, want >= 200ms", d)
	}
	c.request(1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	if got := toolText(t, c.response(5*time.Second)); got != "x" {
		t.Errorf("echo = %q after a slow initialize", got)
	}
}

func TestHangInitialize(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	c := startRaw(t, "--hang-initialize", "--record="+record)
	c.request(1, "initialize", `{"protocolVersion":"2025-11-25"}`)
	c.silent(300 * time.Millisecond)
	if lines := readLines(t, record); len(lines) != 1 || lines[0] != "initialize id=1" {
		t.Errorf("record = %q", lines)
	}
	c.p.stdin.Close()
	if code := c.p.exitCode(t, 5*time.Second); code != 0 {
		t.Errorf("exit code %d after stdin EOF", code)
	}
}

func TestStdinEOF(t *testing.T) {
	t.Parallel()
	c := startRaw(t)
	c.handshake()
	c.request(1, "tools/call", `{"name":"slow","arguments":{"ms":60000}}`)
	c.p.stdin.Close()
	if code := c.p.exitCode(t, 3*time.Second); code != 0 {
		t.Errorf("exit code %d after stdin EOF", code)
	}
}

func TestNoExitOnStdinEOF(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--no-exit-on-stdin-eof")
	c.handshake()
	c.p.stdin.Close()
	if !c.p.running(300 * time.Millisecond) {
		t.Fatal("exited after stdin EOF")
	}
	waitFor(t, 5*time.Second, "the stderr notice", func() bool {
		return strings.Contains(c.p.stderr.String(), "fakemcp: stdin closed, staying alive")
	})
}

func TestSIGTERM(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t)
		c.handshake()
		c.p.cmd.Process.Signal(syscall.SIGTERM)
		c.p.exitCode(t, 5*time.Second)
		if ws, ok := c.p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGTERM {
			t.Errorf("wait status %v, want killed by SIGTERM", c.p.cmd.ProcessState)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--ignore-sigterm")
		c.handshake() // the handler is installed before serving starts
		c.p.cmd.Process.Signal(syscall.SIGTERM)
		if !c.p.running(300 * time.Millisecond) {
			t.Fatal("died of SIGTERM")
		}
		waitFor(t, 5*time.Second, "the stderr notice", func() bool {
			return strings.Contains(c.p.stderr.String(), "fakemcp: ignoring SIGTERM")
		})
	})
}

func TestPidfile(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	c := startRaw(t, "--pidfile="+pidfile)
	c.handshake() // written before serving
	b, err := os.ReadFile(pidfile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(c.p.cmd.Process.Pid) {
		t.Errorf("pidfile %q, %v; want %d", b, err, c.p.cmd.Process.Pid)
	}

	// A restart of the server appends its pid: the file lists every process.
	c2 := startRaw(t, "--pidfile="+pidfile)
	c2.handshake()
	b, err = os.ReadFile(pidfile)
	want := strconv.Itoa(c.p.cmd.Process.Pid) + "\n" + strconv.Itoa(c2.p.cmd.Process.Pid) + "\n"
	if err != nil || string(b) != want {
		t.Errorf("pidfile after a second start %q, %v; want %q", b, err, want)
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{
		"--crash-after=-1", "--crash-after=soon", "--garbage-stdout=sometimes", "--huge-message=12XB",
		"--ping=maybe", "--stderr-flood=lots", "--slow-initialize=soon", "--notification-flood=0", "--tools=-1", "--nope", "extra",
	} {
		p := start(t, arg)
		if code := p.exitCode(t, 5*time.Second); code != 2 {
			t.Errorf("%s: exit code %d, want 2", arg, code)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "64B": 64, "256KiB": 256 << 10, "20MiB": 20 << 20, "1GiB": 1 << 30, "10KB": 10_000, "2MB": 2_000_000,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "MiB", "2TiB", "2000GiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"500": 500, "500/s": 500, "10k/s": 10_000, "0.5/s": 0.5} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1/s", "fast", "2000k/s"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) succeeded", in)
		}
	}
}
