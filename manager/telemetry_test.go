package manager_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/manager"
)

// recorder returns a tracer provider that records every span synchronously
// (no goroutine, so it fits a synctest bubble) and shuts down with the test.
func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return tp, sr
}

// named returns the ended spans called name.
func named(sr *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// requireWired fails the test at once if the supervisor recorded no
// mcp.connect_loop span: its connection attempts are not being traced, and
// saying so is clearer than the span-tree diff that would follow.
func requireWired(t *testing.T, sr *tracetest.SpanRecorder) {
	t.Helper()
	require.NotEmpty(t, named(sr, "mcp.connect_loop"),
		"no mcp.connect_loop span was recorded: the supervisor does not trace its connection attempts")
}

// failFirst is a Dial whose first n attempts fail, and later ones reach p.
func failFirst(n int32, p *peers) manager.DialFunc {
	var dials atomic.Int32
	return func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
		if dials.Add(1) <= n {
			return nil, errors.New("connection refused")
		}
		return p.dial(ctx, name, spec)
	}
}

// A connect failure, one backoff wait and a successful attempt make one
// mcp.connect_loop with three children, each with its attributes.
func TestTelemetryConnectLoopSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		m := newManager(t, manager.Options{Dial: failFirst(1, &peers{}), Rand: constRand(0), TracerProvider: tp})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		synctest.Wait() // the supervisor may end the loop just after it publishes
		requireWired(t, sr)

		const ep = "mcp.endpoint=fake-server"
		require.Equal(t, strings.Join([]string{
			"mcp.connect_loop Ok {mcp.attempts=2 " + ep + " mcp.outcome=connected mcp.reconnect=false mcp.server=demo}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=1 " + ep + " mcp.server=demo}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=demo}",
			"  mcp.connect_attempt Ok {mcp.attempt=2 " + ep + " mcp.server=demo}",
			"",
		}, "\n"), manager.SpanTree(sr.Ended(), "mcp.connect_loop"))

		loop := named(sr, "mcp.connect_loop")[0]
		require.Equal(t, 100*time.Millisecond, loop.EndTime().Sub(loop.StartTime()), "the loop spans the attempts and the wait")
		attempt := named(sr, "mcp.connect_attempt")[0]
		require.Contains(t, attempt.Status().Description, "connection refused")
		require.Len(t, attempt.Events(), 1, "the failure is recorded as an exception event")
	})
}

// A lost session starts a new loop marked as a reconnect (and counted);
// a loop ends failed when retries run out, and unset when the server is
// removed while it backs off.
func TestTelemetryConnectLoopOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
		p := &peers{}
		m := newManager(t, manager.Options{Dial: unreachable(p), Rand: constRand(0), TracerProvider: tp, MeterProvider: mp})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		synctest.Wait()
		requireWired(t, sr)

		time.Sleep(10 * time.Second) // long enough for the failure count to reset
		p.drop(t)
		synctest.Wait()
		_, err = m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, float64(1), manager.MetricValues(t, reader)["mcpvisor.reconnects{mcp.server=demo}"])

		// Retries run out.
		require.NoError(t, m.Add("gone", fakeSpec(t, map[string]any{"max_retries": 1})))
		// Removed while backing off.
		require.NoError(t, m.Add("away", fakeSpec(t, nil)))
		for _, name := range []string{"gone", "away"} {
			_, err := m.Wait(context.Background(), name, manager.StateBackoff)
			require.NoError(t, err)
		}
		done, err := m.Remove("away")
		require.NoError(t, err)
		<-done
		_, err = m.Wait(context.Background(), "gone", manager.StateFailed)
		require.NoError(t, err)
		synctest.Wait()
		const ep = "mcp.endpoint=fake-server"
		require.Equal(t, strings.Join([]string{
			"mcp.connect_loop Ok {mcp.attempts=1 " + ep + " mcp.outcome=connected mcp.reconnect=false mcp.server=demo}",
			"  mcp.connect_attempt Ok {mcp.attempt=1 " + ep + " mcp.server=demo}",
			// The session is lost: the wait opens the next loop.
			"mcp.connect_loop Ok {mcp.attempts=1 " + ep + " mcp.outcome=connected mcp.reconnect=true mcp.server=demo}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=demo}",
			"  mcp.connect_attempt Ok {mcp.attempt=2 " + ep + " mcp.server=demo}",
			"mcp.connect_loop Unset {mcp.attempts=1 " + ep + " mcp.outcome=removed mcp.reconnect=false mcp.server=away}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=1 " + ep + " mcp.server=away}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=away}",
			"mcp.connect_loop Error {error.type=CONNECTION_FAILED mcp.attempts=2 " + ep + " mcp.outcome=failed mcp.reconnect=false mcp.server=gone}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=1 " + ep + " mcp.server=gone}",
			"  mcp.backoff_wait Unset {mcp.attempt=1 mcp.backoff.delay_ms=100 mcp.server=gone}",
			"  mcp.connect_attempt Error {error.type=CONNECTION_FAILED mcp.attempt=2 " + ep + " mcp.server=gone}",
			"",
		}, "\n"), manager.SpanTree(sr.Ended(), "mcp.connect_loop"))
		for _, s := range named(sr, "mcp.connect_loop") {
			if s.Status().Code == codes.Error {
				require.Contains(t, s.Status().Description, "gave up after 2 attempts: ")
			}
		}
	})
}

// unreachable is a Dial for which the servers "gone" and "away" are never
// reachable and every other one is a demo server reached through p.
func unreachable(p *peers) manager.DialFunc {
	return func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
		if name == "gone" || name == "away" {
			return nil, errors.New("connection refused")
		}
		return p.dial(ctx, name, spec)
	}
}

// A removal's span is ended by the server's supervisor as it finishes,
// not by a goroutine that waits for the disposal beside it.
func TestRemoveSpanHasNoGoroutineOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		f := slowServer(5 * time.Second)
		m := newManager(t, manager.Options{Dial: f.serve().dial, TracerProvider: tp})
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		waitConnected(t, m, "x")
		called := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
			called <- err
		}()
		synctest.Wait()
		done, err := m.Remove("x")
		require.NoError(t, err)
		synctest.Wait() // draining the call for 5s
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		require.False(t, strings.Contains(stacks, "manager/telemetry.go"), "a goroutine of the telemetry waits to end the span:\n%s", stacks)
		require.Empty(t, named(sr, "mcp.remove"))
		<-done
		require.Len(t, named(sr, "mcp.remove"), 1)
		require.NoError(t, <-called)
	})
}

// mcp.add and mcp.remove, with their error status when they fail;
// mcp.remove ends when the disposal is complete.
func TestTelemetryAddRemoveSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		m := newManager(t, manager.Options{Dial: (&peers{}).dial, Rand: constRand(0), TracerProvider: tp})
		require.NoError(t, m.Add(" demo ", fakeSpec(t, nil)))
		require.Error(t, m.Add("DEMO", fakeSpec(t, map[string]any{"cwd": "/"})))
		require.Error(t, m.Add("bad.name", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)

		done, err := m.Remove("demo")
		require.NoError(t, err)
		require.Empty(t, named(sr, "mcp.remove"), "mcp.remove ends with the disposal, not with Remove")
		<-done
		require.Len(t, named(sr, "mcp.remove"), 1, "ended by the time the disposal is")
		_, err = m.Remove("nope")
		require.Error(t, err)
		synctest.Wait()

		require.Equal(t, strings.Join([]string{
			"mcp.add Unset {mcp.endpoint=fake-server mcp.server=demo mcp.transport=stdio}",
			"mcp.add Error {error.type=NAME_CONFLICT mcp.endpoint=fake-server mcp.server=DEMO mcp.transport=stdio}",
			"mcp.add Error {error.type=INVALID_CONFIG mcp.endpoint=fake-server mcp.server=bad.name mcp.transport=stdio}",
			"mcp.remove Unset {mcp.server=demo}",
			"mcp.remove Error {error.type=SERVER_NOT_FOUND mcp.server=nope}",
			"",
		}, "\n"), manager.SpanTree(sr.Ended(), "mcp.add", "mcp.remove"))
		for _, s := range named(sr, "mcp.remove") {
			if s.Status().Code == codes.Error {
				require.Contains(t, s.Status().Description, "no such server")
			}
		}
	})
}

// mcp.tool_call is a child of the caller's span and tells a success, a tool
// error result (a result, not a failed span), a rejected call and a call
// cut off by a lost session apart.
func TestTelemetryToolCallSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0), TracerProvider: tp})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)

		ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
		_, err = m.Call(ctx, "demo.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		res, err := m.Call(ctx, "fail", map[string]any{"message": "disk full"}, manager.CallOptions{})
		require.NoError(t, err)
		require.True(t, res.IsError)
		_, err = m.Call(ctx, "demo.add", map[string]any{"a": "two"}, manager.CallOptions{})
		requireCode(t, err, manager.ErrInvalidArguments, "demo", `tools/call "add"`)
		_, err = m.Call(ctx, "nope.echo", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrToolNotFound, "", "call")

		errc := make(chan error, 1)
		go func() {
			_, err := m.Call(ctx, "demo.sleep", map[string]any{"ms": 60_000}, manager.CallOptions{})
			errc <- err
		}()
		synctest.Wait()
		p.drop(t)
		requireCode(t, <-errc, manager.ErrInvocationFailed, "demo", `tools/call "sleep"`)
		parent.End()

		require.Equal(t, strings.Join([]string{
			"caller Unset {}",
			"  mcp.tool_call Unset {mcp.server=demo mcp.tool=echo mcp.tool.is_error=false}",
			"  mcp.tool_call Unset {mcp.server=demo mcp.tool=fail mcp.tool.is_error=true}",
			"  mcp.tool_call Error {error.type=INVALID_ARGUMENTS mcp.server=demo mcp.tool=add}",
			"  mcp.tool_call Error {error.type=TOOL_NOT_FOUND mcp.tool=nope.echo}",
			"  mcp.tool_call Error {error.type=INVOCATION_FAILED mcp.server=demo mcp.tool=sleep}",
			"",
		}, "\n"), manager.SpanTree(sr.Ended(), "caller"))
		for _, s := range named(sr, "mcp.tool_call") {
			require.Equal(t, trace.SpanKindClient, s.SpanKind())
			if s.Status().Code == codes.Error {
				require.NotEmpty(t, s.Status().Description)
				require.Len(t, s.Events(), 1, "%s: the error is recorded", s.Name())
			}
		}
	})
}

// metaServer offers "meta", a tool that records the _meta it was called
// with.
type metaServer struct {
	mu sync.Mutex
	// mu guards metas.
	metas []map[string]any
}

func (ms *metaServer) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "records _meta"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ms.mu.Lock()
			ms.metas = append(ms.metas, req.Params.Meta)
			ms.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	return s
}

// A tool call carries the W3C trace context of its span in _meta
// (traceparent, tracestate), beside a progress token, so a tracing server
// joins the caller's trace.
func TestTelemetryToolCallPropagatesTraceContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, sr := recorder(t)
		ms := &metaServer{}
		m := newManager(t, manager.Options{Dial: (&peers{newServer: ms.server}).dial, TracerProvider: tp})
		require.NoError(t, m.Add("m", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "m", manager.StateConnected)
		require.NoError(t, err)

		// The caller's context comes from upstream, with a tracestate.
		state, err := trace.ParseTraceState("vendor=x")
		require.NoError(t, err)
		remote := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{1, 2, 3},
			SpanID:     trace.SpanID{4, 5, 6},
			TraceFlags: trace.FlagsSampled,
			TraceState: state,
			Remote:     true,
		})
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
		_, err = m.Call(ctx, "m.meta", map[string]any{}, manager.CallOptions{Progress: func(manager.Progress) {}})
		require.NoError(t, err)

		calls := named(sr, "mcp.tool_call")
		require.Len(t, calls, 1)
		sc := calls[0].SpanContext()
		require.Equal(t, remote.TraceID(), sc.TraceID(), "the call joins the caller's trace")
		require.Equal(t, remote.SpanID(), calls[0].Parent().SpanID())

		ms.mu.Lock()
		defer ms.mu.Unlock()
		require.Len(t, ms.metas, 1)
		meta := ms.metas[0]
		require.Equal(t, fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()), meta["traceparent"])
		require.Equal(t, "vendor=x", meta["tracestate"])
		require.Contains(t, meta, "progressToken", "the progress token is kept")
	})
}

// The metrics: requests, their duration, errors by type and servers by
// state, read with a manual reader.
func TestTelemetryMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
		m := newManager(t, manager.Options{Dial: unreachable(&peers{}), Rand: constRand(0), MeterProvider: mp})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		require.NoError(t, m.Add("away", fakeSpec(t, nil)))
		require.NoError(t, m.Add("off", fakeSpec(t, map[string]any{"enabled": false})))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		_, err = m.Wait(context.Background(), "away", manager.StateBackoff)
		require.NoError(t, err)

		ctx := context.Background()
		for range 2 {
			_, err = m.Call(ctx, "demo.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
			require.NoError(t, err)
		}
		_, err = m.Call(ctx, "demo.fail", map[string]any{"message": "no"}, manager.CallOptions{})
		require.NoError(t, err)
		_, err = m.Call(ctx, "demo.add", map[string]any{"a": "two"}, manager.CallOptions{})
		require.Error(t, err)
		_, err = m.Call(ctx, "zzz", nil, manager.CallOptions{})
		require.Error(t, err)

		got := manager.MetricValues(t, reader)
		want := map[string]float64{
			"mcpvisor.requests{mcp.method=tools/call,mcp.server=demo}": 4,
			"mcpvisor.requests{mcp.method=tools/call}":                 1,
			// Duration: successes and tool errors share a series; failures
			// have their error.type.
			"mcpvisor.request.duration{mcp.method=tools/call,mcp.server=demo}":                              3,
			"mcpvisor.request.duration{error.type=INVALID_ARGUMENTS,mcp.method=tools/call,mcp.server=demo}": 1,
			"mcpvisor.request.duration{error.type=TOOL_NOT_FOUND,mcp.method=tools/call}":                    1,
			"mcpvisor.errors{error.type=TOOL_ERROR,mcp.method=tools/call,mcp.server=demo}":                  1,
			"mcpvisor.errors{error.type=INVALID_ARGUMENTS,mcp.method=tools/call,mcp.server=demo}":           1,
			"mcpvisor.errors{error.type=TOOL_NOT_FOUND,mcp.method=tools/call}":                              1,
		}
		for _, st := range []string{"connecting", "connected", "backoff", "open", "failed", "idle", "disabled", "closing", "removed", "unauthorized"} {
			want["mcpvisor.connections{mcp.state="+st+"}"] = 0
		}
		want["mcpvisor.connections{mcp.state=connected}"] = 1
		want["mcpvisor.connections{mcp.state=backoff}"] = 1
		want["mcpvisor.connections{mcp.state=disabled}"] = 1
		require.Equal(t, want, got)
	})
}
