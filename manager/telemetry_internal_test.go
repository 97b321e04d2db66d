package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// SpanTree and MetricValues are for the external tests (telemetry_test.go).
var (
	SpanTree     = spanTree
	MetricValues = metricValues
)

// spanTree renders the ended spans whose root is named one of roots (all,
// if none given) as an indented tree, one span a line:
//
//	name Status {key=value …}
//
// with the attributes sorted by key and children in the order they
// started (ties in the order they ended, as inside a synctest bubble).
func spanTree(spans []sdktrace.ReadOnlySpan, roots ...string) string {
	spans = slices.Clone(spans)
	slices.SortStableFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var top []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && ids[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
		} else if len(roots) == 0 || slices.Contains(roots, s.Name()) {
			top = append(top, s)
		}
	}
	var b strings.Builder
	var render func(s sdktrace.ReadOnlySpan, depth int)
	render = func(s sdktrace.ReadOnlySpan, depth int) {
		kvs := slices.Clone(s.Attributes())
		slices.SortFunc(kvs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
		attrs := make([]string, 0, len(kvs))
		for _, kv := range kvs {
			attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
		fmt.Fprintf(&b, "%s%s %s {%s}\n", strings.Repeat("  ", depth), s.Name(), s.Status().Code, strings.Join(attrs, " "))
		for _, c := range children[s.SpanContext().SpanID()] {
			render(c, depth+1)
		}
	}
	for _, s := range top {
		render(s, 0)
	}
	return b.String()
}

// metricValues collects reader and flattens what it holds into
// "name{k=v,…}" → value: the sum or gauge value, and for a histogram the
// count of recorded values. Attributes are sorted by key.
func metricValues(t testing.TB, reader sdkmetric.Reader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	key := func(name string, set attribute.Set) string {
		var kv []string
		for _, a := range set.ToSlice() {
			kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
		}
		return name + "{" + strings.Join(kv, ",") + "}"
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Count)
				}
			default:
				t.Fatalf("metric %s has unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// The connectTrace API that the supervisor drives: loops open lazily at the
// first attempt or wait, end as connected, failed or removed, and a loop
// after a session counts as a reconnect.
func TestTelemetryConnectTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
		defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
		tel := newTelemetry(tp, mp, func() []Status { return nil }, slog.New(slog.DiscardHandler))
		defer tel.close()
		refused := newError(CodeConnectionFailed, "git", "connect", errors.New("connection refused"))

		ct := tel.connectTrace("git", "git-mcp --stdio")
		// After add: failure, backoff, success.
		ct.attempt(1)(refused)
		end := ct.backoffWait(1, 100*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		end()
		ct.attempt(2)(nil)
		ct.connected()
		// The session is lost: the wait before the next attempt opens a
		// reconnect loop.
		ct.backoffWait(1, 100*time.Millisecond)()
		ct.attempt(2)(nil)
		ct.connected()
		// Lost again; this time the server gives up.
		ct.backoffWait(1, 100*time.Millisecond)()
		ct.attempt(2)(refused)
		ct.failed(fmt.Errorf("gave up after 2 attempts: %w", refused))
		ct.failed(refused) // no loop is open: nothing
		// The circuit opens; the server is disabled while it waits.
		ct.attempt(1)(refused)
		end = ct.circuitWait(1, time.Now().Add(30*time.Second))
		ct.stopped("disabled")
		end()
		// Removed while waiting.
		ct.backoffWait(1, 100*time.Millisecond)()
		ct.stopped("removed")
		ct.stopped("removed")

		const ep = "mcp.endpoint=git-mcp --stdio"
		want := strings.Join([]string{
			"mcp.connect_loop Ok {mcp.attempts=2 " + ep + " mcp.outcome=connected mcp.reconnect=false mcp.server=git}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=1 " + ep + " mcp.server=git}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=git}",
			"  mcp.connect_attempt Ok {mcp.attempt=2 " + ep + " mcp.server=git}",
			"mcp.connect_loop Ok {mcp.attempts=1 " + ep + " mcp.outcome=connected mcp.reconnect=true mcp.server=git}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=git}",
			"  mcp.connect_attempt Ok {mcp.attempt=2 " + ep + " mcp.server=git}",
			"mcp.connect_loop Error {error.type=CONNECTION_FAILED mcp.attempts=1 " + ep + " mcp.outcome=failed mcp.reconnect=true mcp.server=git}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=git}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=2 " + ep + " mcp.server=git}",
			"mcp.connect_loop Unset {mcp.attempts=1 " + ep + " mcp.outcome=disabled mcp.reconnect=true mcp.server=git}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=1 " + ep + " mcp.server=git}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=30000 mcp.circuit=open mcp.server=git}",
			"mcp.connect_loop Unset {mcp.attempts=0 " + ep + " mcp.outcome=removed mcp.reconnect=true mcp.server=git}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=git}",
			"",
		}, "\n")
		spans := sr.Ended()
		require.Equal(t, want, spanTree(spans))

		// Each loop is a trace of its own; a failed one says why.
		traces := map[trace.TraceID]bool{}
		for _, s := range spans {
			traces[s.SpanContext().TraceID()] = true
			if s.Name() == spanConnectLoop && s.Status().Code == codes.Error {
				require.Equal(t, `gave up after 2 attempts: server "git": connect: connection refused`, s.Status().Description)
				require.Len(t, s.Events(), 1, "the error is recorded as an exception event")
			}
		}
		require.Len(t, traces, 5)
		require.Equal(t, 100*time.Millisecond, spans[1].EndTime().Sub(spans[1].StartTime()), "the first wait lasted its delay")

		require.Equal(t, map[string]float64{metricReconnects + "{mcp.server=git}": 1},
			only(metricValues(t, reader), metricReconnects))

		// Nothing breaks without telemetry.
		var none *telemetry
		nt := none.connectTrace("git", "")
		nt.attempt(1)(refused)
		nt.backoffWait(1, time.Second)()
		nt.connected()
		nt.failed(refused)
		nt.circuitWait(1, time.Now())()
		nt.stopped("removed")
	})
}

// only keeps the values of one metric.
func only(values map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range values {
		if strings.HasPrefix(k, name+"{") {
			out[k] = v
		}
	}
	return out
}
