package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the manager's spans and metrics.
const scopeName = "github.com/mcpvisor/mcpvisor/manager"

// Span names, as the package doc lists them.
const (
	spanAdd            = "mcp.add"
	spanConnectLoop    = "mcp.connect_loop"
	spanConnectAttempt = "mcp.connect_attempt"
	spanBackoffWait    = "mcp.backoff_wait"
	spanToolCall       = "mcp.tool_call"
	spanRemove         = "mcp.remove"
)

// Attribute keys of the manager's spans and metrics.
const (
	attrServer        = attribute.Key("mcp.server")
	attrTransport     = attribute.Key("mcp.transport")
	attrEndpoint      = attribute.Key("mcp.endpoint")
	attrAttempt       = attribute.Key("mcp.attempt")
	attrAttempts      = attribute.Key("mcp.attempts")
	attrDelayMS       = attribute.Key("mcp.backoff.delay_ms")
	attrReconnect     = attribute.Key("mcp.reconnect")
	attrOutcome       = attribute.Key("mcp.outcome")
	attrCircuit       = attribute.Key("mcp.circuit")
	attrTool          = attribute.Key("mcp.tool")
	attrClient        = attribute.Key("mcp.client")
	attrToolIsError   = attribute.Key("mcp.tool.is_error")
	attrMethod        = attribute.Key("mcp.method")
	attrState         = attribute.Key("mcp.state")
	attrErrorType     = attribute.Key("error.type") // OTel semantic conventions
	errorTypeToolFail = "TOOL_ERROR"                // error.type of a result with isError set
)

// Metric names. Durations are in seconds, as the OTel conventions ask.
const (
	metricRequests    = "mcpvisor.requests"
	metricDuration    = "mcpvisor.request.duration"
	metricErrors      = "mcpvisor.errors"
	metricConnections = "mcpvisor.connections"
	metricReconnects  = "mcpvisor.reconnects"
)

// durationBuckets suit MCP requests: milliseconds for local tools up to
// minutes for long-running ones.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// telemetry holds the manager's tracer and metric instruments. It is
// immutable after newTelemetry and safe for concurrent use; every method
// is safe on a nil *telemetry, which records nothing.
type telemetry struct {
	tracer     trace.Tracer
	prop       propagation.TextMapPropagator
	requests   metric.Int64Counter
	duration   metric.Float64Histogram
	errors     metric.Int64Counter
	reconnects metric.Int64Counter
	reg        metric.Registration // the connections gauge's callback; nil if it failed
	// off is true when both providers are no-ops (the host with no
	// exporter): the call path then skips building spans and attributes.
	off bool
}

// newTelemetry builds the instruments from the providers (the otel globals
// when nil). statuses is read at each metric collection for the
// connections gauge. A failure to create an instrument is logged and leaves
// that instrument a no-op; telemetry never stops the manager.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, statuses func() []Status, log *slog.Logger) *telemetry {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	_, noTraces := tp.(tracenoop.TracerProvider)
	_, noMetrics := mp.(metricnoop.MeterProvider)
	t := &telemetry{
		tracer: tp.Tracer(scopeName),
		prop:   propagation.TraceContext{},
		off:    noTraces && noMetrics,
	}
	meter := mp.Meter(scopeName)
	var errs []error
	var err error
	t.requests, err = meter.Int64Counter(metricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests made to MCP servers (tool calls), whatever their outcome."))
	errs = append(errs, err)
	t.duration, err = meter.Float64Histogram(metricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of requests to MCP servers, including the wait for a connection."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	t.errors, err = meter.Int64Counter(metricErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Failed requests by error.type: the error code, or TOOL_ERROR for a result with isError set."))
	errs = append(errs, err)
	t.reconnects, err = meter.Int64Counter(metricReconnects, metric.WithUnit("{reconnect}"),
		metric.WithDescription("Sessions re-established after an earlier session of the same server ended."))
	errs = append(errs, err)
	conns, err := meter.Int64ObservableGauge(metricConnections, metric.WithUnit("{server}"),
		metric.WithDescription("Declared servers by connection state."))
	errs = append(errs, err)
	if err == nil {
		t.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			var counts [len(stateNames)]int64
			for _, st := range statuses() {
				if int(st.State) >= 0 && int(st.State) < len(counts) {
					counts[st.State]++
				}
			}
			for s, n := range counts {
				o.ObserveInt64(conns, n, metric.WithAttributes(attrState.String(State(s).String())))
			}
			return nil
		}, conns)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		log.Warn("telemetry: some metric instruments are disabled", "error", err)
	}
	return t
}

// close stops the connections gauge from reporting this manager.
func (t *telemetry) close() {
	if t == nil || t.reg == nil {
		return
	}
	_ = t.reg.Unregister()
}

// otelErrorType is the error.type of err: its [Code] if it is an [*Error].
func otelErrorType(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return string(e.Code)
	}
	return otherErrorType
}

// otherErrorType is the OTel conventions' error.type when nothing better
// is known.
const otherErrorType = "_OTHER"

// markFailed marks span as failed with err.
func markFailed(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(attrErrorType.String(otelErrorType(err)))
}

// add starts the mcp.add span of [Manager.Add]; the returned function ends
// it with Add's result.
func (t *telemetry) add(name string, spec Spec) func(error) {
	if t == nil {
		return func(error) {}
	}
	_, span := t.tracer.Start(context.Background(), spanAdd, trace.WithAttributes(
		attrServer.String(name),
		attrTransport.String(string(spec.Transport)),
		attrEndpoint.String(spec.Endpoint()),
	))
	return func(err error) {
		if err != nil {
			markFailed(span, err)
		}
		span.End()
	}
}

// remove starts the mcp.remove span of [Manager.Remove]. Remove fails it
// at once, or hands it to the server's supervisor, which ends it when its
// disposal is complete.
func (t *telemetry) remove(name string) *removeSpan {
	if t == nil {
		return nil
	}
	_, span := t.tracer.Start(context.Background(), spanRemove, trace.WithAttributes(attrServer.String(name)))
	return &removeSpan{span}
}

// removeSpan is one mcp.remove span; nil when there is no telemetry.
type removeSpan struct{ span trace.Span }

// fail ends the span with Remove's error.
func (r *removeSpan) fail(err error) {
	if r == nil {
		return
	}
	markFailed(r.span, err)
	r.span.End()
}

// end ends the span: the disposal is complete.
func (r *removeSpan) end() {
	if r != nil {
		r.span.End()
	}
}

// callSpan is one tool call's mcp.tool_call span and metrics. It belongs to
// the calling goroutine.
type callSpan struct {
	t      *telemetry
	span   trace.Span
	start  time.Time
	server string // "" until the name is resolved
}

// toolCall starts the mcp.tool_call span of [Manager.Call] as a child of
// whatever span ctx holds, and returns ctx with it.
func (t *telemetry) toolCall(ctx context.Context, name string) (context.Context, *callSpan) {
	if t == nil || t.off {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, spanToolCall, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrTool.String(name)))
	return ctx, &callSpan{t: t, span: span, start: time.Now()}
}

// target records the server and tool that the call's name resolved to.
func (c *callSpan) target(server, tool, client string) {
	if c == nil {
		return
	}
	c.server = server
	c.span.SetAttributes(attrServer.String(server), attrTool.String(tool))
	if client != "" {
		c.span.SetAttributes(attrClient.String(client))
	}
}

// inject writes the W3C trace context of ctx (traceparent, tracestate)
// into the request's _meta, so that a tracing server can join the trace.
func (c *callSpan) inject(ctx context.Context, p *mcp.CallToolParams) {
	if c == nil {
		return
	}
	c.t.prop.Inject(ctx, metaCarrier{p})
}

// injectRaw is inject for a request's _meta as JSON (nil for none): meta
// with the W3C trace context of ctx in place of whatever trace context it
// had. It is meta itself when ctx has no trace context or meta already
// carries it (a caller's, passed on by a span that records nothing), and
// when meta is not a JSON object (for the caller to refuse).
func (c *callSpan) injectRaw(ctx context.Context, meta json.RawMessage) json.RawMessage {
	if c == nil {
		return meta
	}
	carrier := propagation.MapCarrier{}
	c.t.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return meta
	}
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(meta); len(t) > 0 && string(t) != "null" {
		if json.Unmarshal(t, &m) != nil || m == nil {
			return meta
		}
	}
	changed := false
	for k, v := range carrier {
		b, err := json.Marshal(v)
		if err != nil {
			return meta
		}
		if !bytes.Equal(m[k], b) {
			m[k], changed = b, true
		}
	}
	if !changed {
		return meta
	}
	out, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return out
}

// end records the call's outcome on its span and in the metrics, and ends
// the span.
func (c *callSpan) end(res *mcp.CallToolResult, err error) {
	if c == nil {
		return
	}
	attrs := []attribute.KeyValue{attrMethod.String("tools/call")}
	if c.server == "" {
		var e *Error
		if errors.As(err, &e) {
			c.server = e.Server
		}
	}
	if c.server != "" {
		attrs = append(attrs, attrServer.String(c.server))
	}
	ctx := trace.ContextWithSpan(context.Background(), c.span) // exemplars point at the span
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	c.t.requests.Add(ctx, 1, set)
	switch {
	case err != nil:
		markFailed(c.span, err)
		typ := attrErrorType.String(otelErrorType(err))
		c.t.duration.Record(ctx, time.Since(c.start).Seconds(), metric.WithAttributes(append(attrs, typ)...))
		c.t.errors.Add(ctx, 1, metric.WithAttributes(append(attrs, typ)...))
	case res != nil && res.IsError:
		c.span.SetAttributes(attrToolIsError.Bool(true))
		c.t.duration.Record(ctx, time.Since(c.start).Seconds(), set)
		c.t.errors.Add(ctx, 1, metric.WithAttributes(append(attrs, attrErrorType.String(errorTypeToolFail))...))
	default:
		c.span.SetAttributes(attrToolIsError.Bool(false))
		c.t.duration.Record(ctx, time.Since(c.start).Seconds(), set)
	}
	c.span.End()
}

// metaCarrier lets a propagator read and write a request's _meta.
type metaCarrier struct {
	p interface {
		GetMeta() map[string]any
		SetMeta(map[string]any)
	}
}

func (c metaCarrier) Get(key string) string {
	s, _ := c.p.GetMeta()[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) {
	m := c.p.GetMeta()
	if m == nil {
		m = map[string]any{}
		c.p.SetMeta(m)
	}
	m[key] = value
}

func (c metaCarrier) Keys() []string {
	m := c.p.GetMeta()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// connectTrace traces one server's connection attempts: each run of
// attempts is one mcp.connect_loop span (a root span: its own trace), with
// an mcp.connect_attempt child per attempt and an mcp.backoff_wait child
// per wait between them (backoff, or circuit open until the probe). A loop
// opens lazily at the first attempt or wait after the server was added or
// its session ended, and ends when the server connects (OK), gives up
// (error), or stops trying because it is removed or disabled (unset).
//
// It belongs to the supervisor goroutine, which alone calls it: it has no
// lock, so no span starts or ends under one (a synchronous span processor
// exports inside End). Every method is safe on a nil *connectTrace.
type connectTrace struct {
	t        *telemetry
	server   string
	endpoint string

	loop       trace.Span      // the open mcp.connect_loop; nil between loops
	loopCtx    context.Context // carries loop, the parent of attempts and waits
	attempts   int             // attempts in the open loop
	hadSession bool            // a session has been up before: the next loop is a reconnect
}

// connectTrace returns the tracer of a server's connection attempts.
func (t *telemetry) connectTrace(server, endpoint string) *connectTrace {
	if t == nil {
		return nil
	}
	return &connectTrace{t: t, server: server, endpoint: endpoint}
}

// open starts a loop span unless one is open, returning its context.
func (c *connectTrace) open() context.Context {
	if c.loop == nil {
		c.loopCtx, c.loop = c.t.tracer.Start(context.Background(), spanConnectLoop,
			trace.WithNewRoot(), trace.WithAttributes(
				attrServer.String(c.server),
				attrEndpoint.String(c.endpoint),
				attrReconnect.Bool(c.hadSession),
			))
		c.attempts = 0
	}
	return c.loopCtx
}

// attempt starts the span of connection attempt n (opening a loop if
// none is open); the returned function ends it with the attempt's error.
func (c *connectTrace) attempt(n int) func(error) {
	if c == nil {
		return func(error) {}
	}
	ctx := c.open()
	c.attempts++
	_, span := c.t.tracer.Start(ctx, spanConnectAttempt, trace.WithAttributes(
		attrServer.String(c.server),
		attrEndpoint.String(c.endpoint),
		attrAttempt.Int(n),
	))
	return func(err error) {
		if err != nil {
			markFailed(span, err)
		} else {
			span.SetStatus(codes.Ok, "")
		}
		span.End()
	}
}

// backoffWait starts the span of the wait of delay d after the n-th
// consecutive failure (opening a loop if none is open); the returned
// function ends it, whether the wait ran out or was cut short.
func (c *connectTrace) backoffWait(n int, d time.Duration) func() {
	return c.wait(n, d)
}

// circuitWait starts the span of the wait until the breaker's probe after
// the n-th consecutive failure: an mcp.backoff_wait with mcp.circuit=open.
func (c *connectTrace) circuitWait(n int, until time.Time) func() {
	return c.wait(n, time.Until(until), attrCircuit.String("open"))
}

func (c *connectTrace) wait(n int, d time.Duration, extra ...attribute.KeyValue) func() {
	if c == nil {
		return func() {}
	}
	ctx := c.open()
	attrs := append([]attribute.KeyValue{
		attrServer.String(c.server),
		attrAttempt.Int(n),
		attrDelayMS.Int64(d.Milliseconds()),
	}, extra...)
	_, span := c.t.tracer.Start(ctx, spanBackoffWait, trace.WithAttributes(attrs...))
	return func() { span.End() }
}

// connected ends the open loop as successful; a session after an earlier
// one counts as a reconnect.
func (c *connectTrace) connected() {
	if c == nil {
		return
	}
	reconnect := c.hadSession
	c.hadSession = true
	c.end(codes.Ok, "", "connected", nil)
	if reconnect {
		c.t.reconnects.Add(context.Background(), 1, metric.WithAttributes(attrServer.String(c.server)))
	}
}

// failed ends the open loop with err: the server gave up (state failed).
// Its error.type is err's code, or CONNECTION_FAILED.
func (c *connectTrace) failed(err error) {
	if c == nil {
		return
	}
	c.end(codes.Error, err.Error(), "failed", err)
}

// stopped ends the open loop, if any, because the server stopped trying
// for reason: "removed", "replaced", "shutdown", "disabled".
func (c *connectTrace) stopped(reason string) {
	if c == nil {
		return
	}
	c.end(codes.Unset, "", reason, nil)
}

// end ends the open loop, if any, with its outcome.
func (c *connectTrace) end(code codes.Code, desc, outcome string, err error) {
	if c.loop == nil {
		return
	}
	if err != nil {
		markFailed(c.loop, err)
		if otelErrorType(err) == otherErrorType {
			c.loop.SetAttributes(attrErrorType.String(string(CodeConnectionFailed)))
		}
	} else {
		c.loop.SetStatus(code, desc)
	}
	c.loop.SetAttributes(attrOutcome.String(outcome), attrAttempts.Int(c.attempts))
	c.loop.End()
	c.loop, c.loopCtx = nil, nil
}
