//go:build linux

package main

import (
	"bufio"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// echoAndFail waits for the demo server, calls a tool that answers and one
// that returns a tool error, stays a little (for a periodic metrics
// export) and returns the first one's text.
const echoAndFail = `assert(mcp_wait("demo", "connected"))
local res = mcp_call("demo.echo", {text = "hi"})
mcp_call("demo.fail", {message = "no"})
sleep(0.5)
return res.text`

// gotSpan is one span as an OTLP receiver decoded it.
type gotSpan struct {
	name, traceID, spanID, parentID string
	status                          string
	attrs                           map[string]string
}

// otlpReceiver is a local OTLP/HTTP collector (on 127.0.0.1) that decodes
// the protobuf requests it receives.
type otlpReceiver struct {
	srv *httptest.Server

	mu sync.Mutex
	// mu guards the following.
	requests  int
	spans     []gotSpan
	resources []map[string]string // of the trace requests
	metrics   map[string]bool     // names
	// connections is the highest mcpvisor.connections value seen per state.
	connections map[string]int64
	errs        []error
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{metrics: map[string]bool{}, connections: map[string]int64{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	err := r.receive(req)
	r.mu.Lock()
	r.requests++
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err))
	}
	r.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp proto.Message = &colltrace.ExportTraceServiceResponse{}
	if req.URL.Path == "/v1/metrics" {
		resp = &collmetrics.ExportMetricsServiceResponse{}
	}
	b, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (r *otlpReceiver) receive(req *http.Request) error {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return fmt.Errorf("content type %q", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return err
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	switch req.URL.Path {
	case "/v1/traces":
		var ex colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &ex); err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rs := range ex.GetResourceSpans() {
			r.resources = append(r.resources, attrMap(rs.GetResource().GetAttributes()))
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, gotSpan{
						name:     s.GetName(),
						traceID:  hex.EncodeToString(s.GetTraceId()),
						spanID:   hex.EncodeToString(s.GetSpanId()),
						parentID: hex.EncodeToString(s.GetParentSpanId()),
						status:   s.GetStatus().GetCode().String(),
						attrs:    attrMap(s.GetAttributes()),
					})
				}
			}
		}
	case "/v1/metrics":
		var ex collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &ex); err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rm := range ex.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					r.metrics[m.GetName()] = true
					if m.GetName() != "mcpvisor.connections" {
						continue
					}
					for _, p := range m.GetGauge().GetDataPoints() {
						state := attrMap(p.GetAttributes())["mcp.state"]
						r.connections[state] = max(r.connections[state], p.GetAsInt())
					}
				}
			}
		}
	default:
		return fmt.Errorf("unexpected path")
	}
	return nil
}

// attrMap renders OTLP attributes as strings.
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetBoolValue())
		default:
			out[kv.GetKey()] = v.GetStringValue()
		}
	}
	return out
}

// find returns the spans called name whose attributes include want.
func (r *otlpReceiver) find(name string, want map[string]string) []gotSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gotSpan
	for _, s := range r.spans {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.attrs[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, s)
		}
	}
	return out
}

// otlpEnv points the binary's exporters at r over http/protobuf.
func (r *otlpReceiver) env(extra ...string) []string {
	return append([]string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.srv.URL,
	}, extra...)
}

// With the OTLP exporters on, the binary exports the manager's spans and
// metrics to a collector, with service.name and service.version: metrics
// periodically, and both once more before it exits.
func TestOTLPExport(t *testing.T) {
	r := newOTLPReceiver(t)
	o := runBinary(t, invocation{args: []string{"-e", echoAndFail}, env: r.env("OTEL_METRIC_EXPORT_INTERVAL=100")})
	require.Equal(t, 0, o.code, "exit code")
	require.Equal(t, "hi\n", o.stdout)
	require.Empty(t, o.stderr, "no export failure is logged")

	r.mu.Lock()
	require.Empty(t, r.errs)
	require.NotEmpty(t, r.resources)
	for _, res := range r.resources {
		require.Equal(t, "mcpvisor", res["service.name"])
		require.Equal(t, version(), res["service.version"])
	}
	r.mu.Unlock()

	require.Len(t, r.find("mcp.add", map[string]string{"mcp.server": "demo", "mcp.transport": "stdio"}), 1)
	echo := r.find("mcp.tool_call", map[string]string{"mcp.server": "demo", "mcp.tool": "echo", "mcp.tool.is_error": "false"})
	require.Len(t, echo, 1)
	require.Equal(t, "STATUS_CODE_UNSET", echo[0].status)
	require.Len(t, r.find("mcp.tool_call", map[string]string{"mcp.tool": "fail", "mcp.tool.is_error": "true"}), 1)

	r.mu.Lock()
	for _, name := range []string{"mcpvisor.requests", "mcpvisor.request.duration", "mcpvisor.errors", "mcpvisor.connections"} {
		require.True(t, r.metrics[name], "metric %s was exported; got %v", name, r.metrics)
	}
	require.Equal(t, int64(1), r.connections["connected"], "servers by state: %v", r.connections)
	r.mu.Unlock()

	loops := r.find("mcp.connect_loop", map[string]string{"mcp.server": "demo", "mcp.outcome": "connected"})
	require.Len(t, loops, 1)
	require.Equal(t, "STATUS_CODE_OK", loops[0].status)
	attempts := r.find("mcp.connect_attempt", map[string]string{"mcp.server": "demo", "mcp.attempt": "1"})
	require.Len(t, attempts, 1)
	require.Equal(t, loops[0].spanID, attempts[0].parentID, "the attempt is a child of the loop")
	require.Equal(t, loops[0].traceID, attempts[0].traceID)
}

// OTEL_SERVICE_NAME names the service; exporting is opt-in: with no
// OTEL_*_EXPORTER set, nothing is sent even when an endpoint is.
func TestOTelServiceNameAndOffByDefault(t *testing.T) {
	r := newOTLPReceiver(t)
	o := runBinary(t, invocation{args: []string{"-e", echoHi}, env: r.env("OTEL_SERVICE_NAME=visor-test", "OTEL_METRICS_EXPORTER=none")})
	require.Equal(t, 0, o.code)
	r.mu.Lock()
	require.NotEmpty(t, r.resources)
	require.Equal(t, "visor-test", r.resources[0]["service.name"])
	require.Empty(t, r.metrics, "OTEL_METRICS_EXPORTER=none")
	r.mu.Unlock()

	off := newOTLPReceiver(t)
	o = runBinary(t, invocation{args: []string{"-e", echoHi}, env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + off.srv.URL}})
	require.Equal(t, 0, o.code)
	require.Equal(t, "hi\n", o.stdout)
	off.mu.Lock()
	defer off.mu.Unlock()
	require.Zero(t, off.requests, "nothing is exported unless an exporter is chosen")
}

// OTEL_TRACES_EXPORTER=console (and the metrics one) print JSON to stderr,
// beside the logs: stdout keeps only the result.
func TestOTelConsoleExporter(t *testing.T) {
	o := runBinary(t, invocation{
		args: []string{"--log-level", "info", "-e", echoHi},
		env:  []string{"OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=console"},
	})
	require.Equal(t, 0, o.code)
	require.Equal(t, "hi\n", o.stdout)

	spans := map[string]map[string]any{}
	metrics := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(o.stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			require.Regexp(t, logLine, line, "stderr holds logs and telemetry only")
			continue
		}
		var v struct {
			Name       string
			Attributes []struct {
				Key   string
				Value struct{ Value any }
			}
			ScopeMetrics []struct{ Metrics []struct{ Name string } }
		}
		require.NoError(t, json.Unmarshal([]byte(line), &v), "telemetry line %q", line)
		if v.Name != "" {
			attrs := map[string]any{}
			for _, a := range v.Attributes {
				attrs[a.Key] = a.Value.Value
			}
			spans[v.Name] = attrs
		}
		for _, sm := range v.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = true
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, "demo", spans["mcp.add"]["mcp.server"])
	require.Equal(t, "echo", spans["mcp.tool_call"]["mcp.tool"])
	require.Equal(t, "connected", spans["mcp.connect_loop"]["mcp.outcome"])
	require.Contains(t, spans, "mcp.connect_attempt")
	require.True(t, metrics["mcpvisor.requests"], "metrics: %v", metrics)
}

// A bad OTEL_* setting stops the host at startup with a message naming the
// variable and what it accepts.
func TestOTelUnknownExporter(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER=jaeger"},
			`mcpvisor: telemetry: OTEL_TRACES_EXPORTER="jaeger" is not a supported exporter; use one of otlp, console, none` + "\n"},
		{[]string{"OTEL_METRICS_EXPORTER=statsd"},
			`mcpvisor: telemetry: OTEL_METRICS_EXPORTER="statsd" is not a supported exporter; use one of otlp, prometheus, console, none` + "\n"},
		{[]string{"OTEL_TRACES_EXPORTER=otlp,console"},
			`mcpvisor: telemetry: OTEL_TRACES_EXPORTER="otlp,console": only one exporter at a time is supported; use one of otlp, console, none` + "\n"},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"},
			"mcpvisor: telemetry: otlp traces exporter: invalid OTLP protocol - should be one of ['grpc', 'http/protobuf']\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.env, " "), func(t *testing.T) {
			o := runBinary(t, invocation{args: []string{"-e", "return 1"}, env: tt.env})
			require.Equal(t, 1, o.code)
			require.Empty(t, o.stdout)
			require.Equal(t, tt.want, o.stderr)
		})
	}
}
