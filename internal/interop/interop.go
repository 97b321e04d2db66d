package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Package is the npm package this fixture runs.
const Package = "@modelcontextprotocol/server-everything"

// EnvRequire names the environment variable that turns a missing install into
// a test failure instead of a skip.
const EnvRequire = "MCPVISOR_INTEROP"

// BaseTools are the tools the pinned server-everything registers for every
// client, sorted by name (more come later for some clients; see doc.go).
var BaseTools = []string{
	"echo",
	"get-annotated-message",
	"get-env",
	"get-resource-links",
	"get-resource-reference",
	"get-structured-content",
	"get-sum",
	"get-tiny-image",
	"gzip-file-as-resource",
	"toggle-simulated-logging",
	"toggle-subscriber-updates",
	"trigger-long-running-operation",
}

// InstallHint is the message given when a pinned package cannot be run.
const InstallHint = "the interop packages (server-everything, server-filesystem, the MCP Inspector, the TypeScript SDK, Claude Code) are not installed: run `npm ci --prefix internal/interop`"

const (
	// startTimeout bounds how long StartHTTP/StartSSE wait for the port.
	startTimeout = 20 * time.Second
	// startAttempts is how often a start is retried when the server exits
	// before listening (e.g. the free port was taken in between).
	startAttempts = 3
	// termGrace is how long cleanup waits after SIGTERM before SIGKILL.
	termGrace = 2 * time.Second
	// outputTail is how much of the server's output is kept for diagnostics.
	outputTail = 64 << 10
)

// mode is a transport argument of server-everything's dist/index.js.
type mode string

const (
	modeStdio mode = "stdio"
	modeSSE   mode = "sse"
	modeHTTP  mode = "streamableHttp"
)

// ServerDir returns the absolute path of the installed server-everything
// package (internal/interop/node_modules/@modelcontextprotocol/server-everything).
// It skips tb (or fails it when MCPVISOR_INTEROP=1) when the package is not
// installed, or when the installed version differs from the pinned one.
func ServerDir(tb testing.TB) string {
	tb.Helper()
	dir, err := serverDir()
	if err != nil {
		missing(tb, err)
	}
	return dir
}

// StdioCommand returns the argv that runs server-everything over stdio:
// {"/abs/path/to/node", "<ServerDir>/dist/index.js", "stdio"}. The caller
// spawns and reaps the process. It skips tb (or fails it when
// MCPVISOR_INTEROP=1) when node or the package is missing.
func StdioCommand(tb testing.TB) []string {
	tb.Helper()
	node, entry := requireInstalled(tb)
	return []string{node, entry, string(modeStdio)}
}

// TSClient is the argv that runs tsclient.mjs, an MCP client written with
// the TypeScript SDK (pinned beside server-everything), with node: append
// its arguments (see the script). It skips tb (or fails it when
// MCPVISOR_INTEROP=1) when node or the SDK is missing.
func TSClient(tb testing.TB) []string {
	tb.Helper()
	node, _ := requireInstalled(tb)
	fixture, err := fixtureDir()
	if err != nil {
		missing(tb, err)
	}
	if _, err := os.Stat(filepath.Join(fixture, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing(tb, err)
	}
	return []string{node, filepath.Join(fixture, "tsclient.mjs")}
}

// StartHTTP starts server-everything in streamable HTTP mode on a free port,
// waits until it accepts connections on 127.0.0.1, and returns its endpoint
// URL, "http://127.0.0.1:PORT/mcp". The server runs in its own process group;
// tb.Cleanup kills the group and reaps the process. It skips tb (or fails it
// when MCPVISOR_INTEROP=1) when node or the package is missing.
func StartHTTP(tb testing.TB) string {
	tb.Helper()
	return "http://" + start(tb, modeHTTP) + "/mcp"
}

// StartSSE is like [StartHTTP] for the legacy HTTP+SSE transport and returns
// "http://127.0.0.1:PORT/sse".
func StartSSE(tb testing.TB) string {
	tb.Helper()
	return "http://" + start(tb, modeSSE) + "/sse"
}

// Env returns the environment to run server-everything with: this process's
// environment, plus GZIP_ALLOWED_DOMAINS=127.0.0.1 so that the
// gzip-file-as-resource tool (whose default input is a URL on the internet)
// can fetch only from this machine. StartHTTP and StartSSE use it; give it to
// the process started from StdioCommand.
func Env() []string {
	return append(os.Environ(), "GZIP_ALLOWED_DOMAINS=127.0.0.1")
}

// missing skips tb, or fails it when EnvRequire is "1".
func missing(tb testing.TB, cause error) {
	tb.Helper()
	msg := InstallHint
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%s [%s=1]", msg, EnvRequire)
	}
	tb.Skip(msg)
}

// requireInstalled returns the absolute paths of node and of the server's
// entry point, or ends the test via missing.
func requireInstalled(tb testing.TB) (node, entry string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err != nil {
		missing(tb, fmt.Errorf("node not found: %w", err))
	}
	entry = filepath.Join(ServerDir(tb), "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		missing(tb, err)
	}
	return node, entry
}

// fixtureDir returns the absolute path of this package's directory.
//
// It prefers the compile-time path of this file; with -trimpath that path is
// not absolute, so it falls back to walking up from the working directory
// (a package directory of this module when run by go test) to go.mod.
func fixtureDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "internal", "interop"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
		dir = parent
	}
}

var (
	serverDirOnce sync.Once
	serverDirPath string
	serverDirErr  error
)

// serverDir locates the installed package and checks that its version is the
// one pinned in package.json (a stale node_modules is reported as missing).
func serverDir() (string, error) {
	serverDirOnce.Do(func() {
		serverDirPath, serverDirErr = findServerDir()
	})
	return serverDirPath, serverDirErr
}

func findServerDir() (string, error) { return packageDir(Package) }

// packageDir locates an installed npm package of the fixture and checks
// that its version is the one pinned in package.json.
func packageDir(pkg string) (string, error) {
	fixture, err := fixtureDir()
	if err != nil {
		return "", err
	}
	var pin struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(fixture, "package.json"), &pin); err != nil {
		return "", err
	}
	want := pin.Dependencies[pkg]
	if want == "" {
		return "", fmt.Errorf("%s does not depend on %s", filepath.Join(fixture, "package.json"), pkg)
	}
	dir := filepath.Join(fixture, "node_modules", filepath.FromSlash(pkg))
	var installed struct {
		Version string `json:"version"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &installed); err != nil {
		return "", err
	}
	if installed.Version != want {
		return "", fmt.Errorf("installed %s@%s, package.json pins %s", pkg, installed.Version, want)
	}
	return dir, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// start runs the server in an HTTP mode and returns "127.0.0.1:PORT".
func start(tb testing.TB, m mode) string {
	tb.Helper()
	node, entry := requireInstalled(tb)
	var errs []error
	for range startAttempts {
		addr, err := startOnce(tb, node, entry, m)
		if err == nil {
			return addr
		}
		var ee *earlyExitError
		if !errors.As(err, &ee) {
			tb.Fatalf("interop: starting server-everything %s: %v", m, err)
		}
		// Most likely the port was taken between choosing and binding it.
		errs = append(errs, err)
	}
	tb.Fatalf("interop: starting server-everything %s: %v", m, errors.Join(errs...))
	return ""
}

type earlyExitError struct {
	state  *os.ProcessState
	output string
}

func (e *earlyExitError) Error() string {
	return fmt.Sprintf("server exited before listening (%v); output:\n%s", e.state, e.output)
}

// server is one running server-everything process.
type server struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's result, valid after done
}

// startOnce starts the server on a fresh free port and waits for it to accept
// connections. On success its cleanup is registered with tb.
func startOnce(tb testing.TB, node, entry string, m mode) (string, error) {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &server{out: &tailBuffer{max: outputTail}, done: make(chan struct{})}
	s.cmd = exec.Command(node, entry, string(m))
	s.cmd.Dir = filepath.Dir(filepath.Dir(entry))
	s.cmd.Env = append(Env(), "PORT="+strconv.Itoa(port))
	s.cmd.Stdout = s.out // same writer: exec shares one pipe and one copier
	s.cmd.Stderr = s.out
	newGroup(s.cmd)
	s.cmd.WaitDelay = time.Second // do not hang on a pipe held by a stray child
	if err := s.cmd.Start(); err != nil {
		return "", fmt.Errorf("exec %s: %w", node, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()

	began := time.Now()
	if err := s.waitListening(addr); err != nil {
		s.stop()
		return "", err
	}
	tb.Logf("interop: server-everything %s (pid %d) listening on %s after %v",
		m, s.cmd.Process.Pid, addr, time.Since(began).Round(time.Millisecond))
	tb.Cleanup(func() {
		s.stop()
		if tb.Failed() {
			tb.Logf("interop: server-everything %s on %s output (tail):\n%s", m, addr, s.out.String())
		}
	})
	return addr, nil
}

// waitListening polls addr with a short, growing interval until it accepts a
// TCP connection, the server exits, or startTimeout passes.
//
// If the port was taken between freePort and the server's bind, the server
// exits (sse mode with status 0) and start retries on a new port. Another
// process listening on exactly that port within those ~300 ms would be
// mistaken for the server; with kernel-chosen ports this is not a practical
// concern.
func (s *server) waitListening(addr string) error {
	deadline := time.Now().Add(startTimeout)
	delay := 5 * time.Millisecond
	for {
		select {
		case <-s.done:
			return &earlyExitError{state: s.cmd.ProcessState, output: s.out.String()}
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections on %s after %v: %v; output:\n%s",
				addr, startTimeout, err, s.out.String())
		}
		select {
		case <-s.done:
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer is a concurrency-safe writer keeping the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
	cut bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) > b.max {
		p = p[len(p)-b.max:]
		b.cut = true
	}
	if over := b.buf.Len() + len(p) - b.max; over > 0 {
		b.buf.Next(over)
		b.cut = true
	}
	b.buf.Write(p)
	return n, nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if b.cut {
		s = "[...]" + s
	}
	return strings.TrimRight(s, "\n")
}
