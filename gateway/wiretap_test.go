package gateway_test

// What a client reads off the wire, in the order it reads it: the go-sdk
// client hands notifications to its handlers on a goroutine of its own,
// so only the bytes tell whether a log message came before the result of
// the call it belongs to.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// wire is the messages a client read, each as it was decoded.
type wire struct {
	mu sync.Mutex
	// mu guards msgs.
	msgs []map[string]any
}

func (w *wire) add(line []byte) {
	line = bytes.TrimSpace(line)
	if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		line = bytes.TrimSpace(data)
	}
	if len(line) == 0 || line[0] != '{' {
		return // SSE framing: event names, ids, blank lines
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return
	}
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

// mark is where what is read next begins.
func (w *wire) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// since describes what was read after mark up to the last response: log
// messages, progress and the server's questions (sent as requests, or as
// the input requests of a result), in order. What came after the last
// response is not part of it: it came after the result.
func (w *wire) since(mark int, server string) []string {
	w.mu.Lock()
	msgs := append([]map[string]any(nil), w.msgs[mark:]...)
	w.mu.Unlock()
	last := -1
	for i, m := range msgs {
		if _, ok := m["id"]; ok && m["method"] == nil {
			last = i
		}
	}
	var out []string
	for _, m := range msgs[:last+1] {
		p, _ := m["params"].(map[string]any)
		switch method, _ := m["method"].(string); method {
		case "notifications/message":
			logger, _ := p["logger"].(string)
			logger = strings.TrimPrefix(strings.TrimPrefix(logger, server), "/")
			out = append(out, fmt.Sprintf("log %v %s %v", p["level"], logger, p["data"]))
		case "notifications/progress":
			out = append(out, fmt.Sprintf("progress %v/%v %v", p["progress"], p["total"], p["message"]))
		case "elicitation/create", "sampling/createMessage", "roots/list":
			out = append(out, asked(method, p))
		case "":
			res, _ := m["result"].(map[string]any)
			if reqs, ok := res["inputRequests"].(map[string]any); ok {
				var questions []string
				for _, r := range reqs {
					r, _ := r.(map[string]any)
					method, _ := r["method"].(string)
					p, _ := r["params"].(map[string]any)
					questions = append(questions, asked(method, p))
				}
				sort.Strings(questions)
				out = append(out, questions...)
			}
		}
	}
	return out
}

// asked describes a question a server asks its client: a form as it
// came (keys sorted), or the method.
func asked(method string, p map[string]any) string {
	if method != "elicitation/create" {
		return "ask " + method
	}
	form, _ := json.Marshal(p["requestedSchema"])
	return fmt.Sprintf("ask form %q %s", p["message"], form)
}

// tapReader records each line read through it.
type tapReader struct {
	r       io.ReadCloser
	w       *wire
	partial []byte
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.partial = append(t.partial, p[:n]...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.w.add(t.partial[:i])
		t.partial = t.partial[i+1:]
	}
	if err != nil && len(t.partial) > 0 {
		t.w.add(t.partial) // a JSON body without a newline
		t.partial = nil
	}
	return n, err
}

func (t *tapReader) Close() error { return t.r.Close() }

// tapTransport records the bodies of every response an HTTP client reads.
type tapTransport struct{ w *wire }

func (t tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		res.Body = &tapReader{r: res.Body, w: t.w}
	}
	return res, err
}

// tappedHTTP is a streamable HTTP transport to url whose reads w records.
func tappedHTTP(url string, w *wire) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: tapTransport{w}}}
}

// tappedStdio is the gateway's stdio serving of server or toolset, as
// `mcpvisor serve` does it, whose output w records.
func (r *rig) tappedStdio(t testing.TB, server, toolset string, w *wire) mcp.Transport {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.gw.ServeStdio(ctx, inR, outW, server, toolset) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-done
	})
	return &mcp.IOTransport{Reader: &tapReader{r: outR, w: w}, Writer: inW}
}

// tappedCommand starts argv (with env added) as a stdio server of its own,
// whose output w records; it is stopped when the test ends.
func tappedCommand(t testing.TB, argv []string, env map[string]string, w *wire) mcp.Transport {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return &mcp.IOTransport{Reader: &tapReader{r: io.NopCloser(bufio.NewReader(stdout)), w: w}, Writer: stdin}
}
