package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// Method is the request a probe sends.
const Method = "server/discover"

// Params are the params of a server/discover on protocol from client: the
// per-request _meta of the sessionless generation (its protocol version,
// the client's identity and capabilities). A probe declares no
// capabilities: it asks nothing of the client.
func Params(protocol string, client *mcp.Implementation) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    protocol,
		mcp.MetaKeyClientInfo:         client,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}})
}

// Stdio sends server/discover with params through raw, a stdio server's
// raw call channel, and waits for the answer.
func Stdio(ctx context.Context, raw *rawrpc.Conn, params json.RawMessage) error {
	_, err := raw.Call(ctx, Method, params, "the health check gave up waiting")
	var rpcErr *rawrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	return err
}

// HTTP is where a streamable HTTP server is probed.
type HTTP struct {
	Client   *http.Client // the connection's own (its headers, its login)
	URL      string       // the endpoint
	Session  string       // Mcp-Session-Id, if the server gave one
	Protocol string       // the negotiated protocol version
}

// probeID is the id of the request a probe POSTs: each probe is alone on
// its request, so one id serves.
const probeID = `"mcpvisor-probe"`

// maxLine bounds one line of an answer's event stream.
const maxLine = 4 << 20

// StatusError is an HTTP answer to a probe that is neither a JSON-RPC
// answer nor a stream of them.
type StatusError struct {
	Code int
	Body string // its start
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// Discover POSTs server/discover with params and waits for the answer,
// as a JSON body or on the event stream the server opens for it.
func (h HTTP) Discover(ctx context.Context, params json.RawMessage) error {
	body := make([]byte, 0, 80+len(params))
	body = append(body, `{"jsonrpc":"2.0","id":`+probeID+`,"method":"`+Method+`","params":`...)
	body = append(append(body, params...), '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", h.Protocol)
	req.Header.Set("Mcp-Method", Method)
	if h.Session != "" {
		req.Header.Set("Mcp-Session-Id", h.Session)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return cause(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		start, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if err := ReadAnswer("application/json", bytes.NewReader(start)); errors.As(err, new(*jsonrpc.Error)) {
			return err // a JSON-RPC error answer with an error status
		}
		return &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(start))}
	}
	return cause(ctx, ReadAnswer(resp.Header.Get("Content-Type"), resp.Body))
}

// cause is ctx's cause once it ended (what cut the request short), else
// err.
func cause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// ReadAnswer reads a server's answer to a probe from r: one JSON-RPC
// response (contentType application/json) or an event stream
// (text/event-stream) that carries it among other messages. It returns
// nil for a result, a *jsonrpc.Error for an error answer, and an error
// saying what was wrong with anything else.
func ReadAnswer(contentType string, r io.Reader) error {
	media, _, _ := mime.ParseMediaType(contentType)
	if media != "text/event-stream" {
		b, err := io.ReadAll(io.LimitReader(r, maxLine))
		if err != nil {
			return err
		}
		found, err := answer(b)
		if err == nil && !found {
			err = errors.New("the answer is not the response to server/discover")
		}
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0: // the event ends
			if len(data) > 0 {
				// Other messages on the stream are passed over; one that
				// names the probe's id and does not decode is its answer.
				if found, err := answer(data); found || (err != nil && isResponse(data)) {
					return err
				}
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if found, err := answer(data); found {
		return err
	}
	return errors.New("the event stream ended without an answer to server/discover")
}

// response is what a probe reads of a JSON-RPC message.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// isResponse reports whether b looks like the answer to the probe (its
// id), whether or not it decodes.
func isResponse(b []byte) bool { return bytes.Contains(b, []byte(probeID)) }

// answer decodes b as the answer to the probe: found is false for another
// message (a notification on the stream); err is the error answer, or why
// the answer is not one.
func answer(b []byte) (found bool, err error) {
	var m response
	if err := json.Unmarshal(b, &m); err != nil {
		return false, fmt.Errorf("the answer is not JSON-RPC: %w", err)
	}
	if string(m.ID) != probeID {
		return false, nil
	}
	switch {
	case m.Error != nil:
		return true, &jsonrpc.Error{Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}
	case len(m.Result) == 0 || m.Result[0] != '{':
		return true, errors.New("the answer to server/discover has no result object")
	}
	return true, nil
}
