package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// telemetryFlushTimeout bounds the final export at shutdown, so an
// unreachable collector cannot hold the exit up.
const telemetryFlushTimeout = 5 * time.Second

// The exporters each signal accepts in OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER. otlp speaks http/protobuf or grpc per
// OTEL_EXPORTER_OTLP_PROTOCOL; prometheus serves /metrics on
// OTEL_EXPORTER_PROMETHEUS_HOST:PORT (localhost:9464).
var (
	traceExporters  = []string{"otlp", "console", "none"}
	metricExporters = []string{"otlp", "prometheus", "console", "none"}
)

// hostTelemetry is the host's OpenTelemetry: tracer and meter providers
// built from the standard OTEL_* environment variables, for the manager.
// Nothing is exported unless OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER
// asks for it; a signal that is off costs nothing (no-op provider).
type hostTelemetry struct {
	tp *sdktrace.TracerProvider // nil when traces are off
	mp *sdkmetric.MeterProvider // nil when metrics are off
}

// newTelemetry configures the exporters the environment asks for. The
// console exporters write to console (stderr, like the logs: stdout
// carries results). Export failures are logged as warnings.
func newTelemetry(ctx context.Context, console io.Writer, log *slog.Logger) (*hostTelemetry, error) {
	t := &hostTelemetry{}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	traces, err := exporterName("OTEL_TRACES_EXPORTER", traceExporters)
	if err != nil {
		return nil, err
	}
	metrics, err := exporterName("OTEL_METRICS_EXPORTER", metricExporters)
	if err != nil {
		return nil, err
	}
	if traces == "none" && metrics == "none" {
		return t, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if errors.Is(err, context.Canceled) {
			// A periodic export that shutdown cut short: the final export
			// at shutdown sends what it held, so nothing is lost.
			return
		}
		log.Warn("telemetry export failed", "error", err)
	}))
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("mcpvisor"), semconv.ServiceVersion(version())),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if traces != "none" {
		opt, err := spanProcessor(ctx, traces, console)
		if err != nil {
			return nil, err
		}
		t.tp = sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res))
	}
	if metrics != "none" {
		reader, err := metricReader(ctx, metrics, console)
		if err != nil {
			_ = t.shutdown(ctx)
			return nil, err
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	}
	return t, nil
}

// exporterName reads one OTEL_*_EXPORTER variable: "none" when unset (not
// autoexport's default otlp: exporting is opt-in), else one of known,
// spelled exactly (autoexport reads the variable again).
func exporterName(env string, known []string) (string, error) {
	v := os.Getenv(env)
	switch {
	case v == "":
		return "none", nil
	case strings.Contains(v, ","):
		return "", fmt.Errorf("telemetry: %s=%q: only one exporter at a time is supported; use one of %s",
			env, v, strings.Join(known, ", "))
	}
	for _, k := range known {
		if v == k {
			return v, nil
		}
	}
	return "", fmt.Errorf("telemetry: %s=%q is not a supported exporter; use one of %s",
		env, v, strings.Join(known, ", "))
}

// spanProcessor builds the exporter called name. The console one writes
// each span as it ends; the others are batched (OTEL_BSP_* apply).
func spanProcessor(ctx context.Context, name string, console io.Writer) (sdktrace.TracerProviderOption, error) {
	if name == "console" {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("telemetry: console traces exporter: %w", err)
		}
		return sdktrace.WithSyncer(exp), nil
	}
	// autoexport reads OTEL_TRACES_EXPORTER and the OTLP settings
	// (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, _ENDPOINT, _HEADERS, …).
	exp, err := autoexport.NewSpanExporter(ctx, autoexport.WithFallbackSpanExporter(off[sdktrace.SpanExporter]))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s traces exporter: %w", name, err)
	}
	return sdktrace.WithBatcher(exp), nil
}

// metricReader builds the reader of the exporter called name; readers
// export periodically (OTEL_METRIC_EXPORT_INTERVAL, default 60s) and once
// more at shutdown.
func metricReader(ctx context.Context, name string, console io.Writer) (sdkmetric.Reader, error) {
	if name == "console" {
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("telemetry: console metrics exporter: %w", err)
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	}
	r, err := autoexport.NewMetricReader(ctx, autoexport.WithFallbackMetricReader(off[sdkmetric.Reader]))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s metrics exporter: %w", name, err)
	}
	return r, nil
}

// off is the autoexport fallback for an unset variable. exporterName has
// already turned unset into "none", so it is never called; it is there so
// that autoexport could never default to otlp.
func off[T any](context.Context) (T, error) {
	var zero T
	return zero, errors.New("no exporter configured")
}

// tracerProvider is what the manager traces with: a no-op when traces are off.
func (t *hostTelemetry) tracerProvider() trace.TracerProvider {
	if t.tp == nil {
		return tracenoop.NewTracerProvider()
	}
	return t.tp
}

// meterProvider is what the manager measures with: a no-op when metrics are off.
func (t *hostTelemetry) meterProvider() metric.MeterProvider {
	if t.mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.mp
}

// shutdown exports what is still buffered and stops the exporters, within
// ctx.
func (t *hostTelemetry) shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: final export: %w", err)
	}
	return nil
}
