package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	wardentrace "github.com/warden-dev/warden/app/trace"
)

// The OpenTelemetry environment variables up reads (the names every OTel
// SDK reads). The traces variables win over the general ones.
const (
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	envOTLPHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envServiceName        = "OTEL_SERVICE_NAME"
)

// traceShutdownTimeout bounds the flush of the spans still queued when up
// stops.
const traceShutdownTimeout = 5 * time.Second

// otlpTracer returns a tracer provider that batches spans to an OTLP/HTTP
// collector, the function that flushes and stops it, and the endpoint to
// print, when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL) or
// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL, to which /v1/traces is added)
// is set, with the headers of OTEL_EXPORTER_OTLP_(TRACES_)HEADERS
// ("k=v,k2=v2", values URL-encoded). Neither set: all nil, and the gateway
// records no traces. The variables are read
// through lookup so that tests set them without touching the process.
func otlpTracer(ctx context.Context, lookup func(string) (string, bool)) (tp trace.TracerProvider, shutdown func(context.Context) error, endpoint string, err error) {
	exporter, endpoint, service, err := otlpExporter(ctx, lookup)
	if err != nil || exporter == nil {
		return nil, nil, "", err
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", service))),
	)
	return sdk, sdk.Shutdown, endpoint, nil
}

// wardenTracer returns up's tracer provider: it always runs the
// TenantProcessor (so the trace store can file every span under its
// tenant; up registers the store's exporter once the trace service
// exists) and, when the OTLP variables name a collector, also exports to
// it. endpoint is "" without a collector.
func wardenTracer(ctx context.Context, lookup func(string) (string, bool)) (tp *sdktrace.TracerProvider, endpoint string, err error) {
	exporter, endpoint, service, err := otlpExporter(ctx, lookup)
	if err != nil {
		return nil, "", err
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSpanProcessor(wardentrace.TenantProcessor{}),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", service))),
	}
	if exporter != nil {
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	return sdktrace.NewTracerProvider(opts...), endpoint, nil
}

// otlpExporter builds the OTLP/HTTP exporter the variables describe, and
// the endpoint to print and the service name; a nil exporter when neither
// endpoint variable is set.
func otlpExporter(ctx context.Context, lookup func(string) (string, bool)) (exp *otlptrace.Exporter, endpoint, service string, err error) {
	service, ok := lookup(envServiceName)
	if !ok || service == "" {
		service = "warden"
	}
	endpoint, ok = lookup(envOTLPTracesEndpoint)
	if !ok || endpoint == "" {
		base, ok := lookup(envOTLPEndpoint)
		if !ok || base == "" {
			return nil, "", service, nil
		}
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", "", fmt.Errorf("OTLP traces endpoint %q must be an http(s) URL", endpoint)
	}
	raw, ok := lookup(envOTLPTracesHeaders)
	if !ok || raw == "" {
		raw, _ = lookup(envOTLPHeaders)
	}
	headers, err := parseOTLPHeaders(raw)
	if err != nil {
		return nil, "", "", err
	}
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(headers))
	if err != nil {
		return nil, "", "", fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Print where the spans go, never the credentials a URL may carry.
	u.User = nil
	return exporter, u.String(), service, nil
}

// parseOTLPHeaders reads the OTel headers format: comma-separated
// key=value pairs, values URL-encoded.
func parseOTLPHeaders(raw string) (map[string]string, error) {
	headers := map[string]string{}
	for pair := range strings.SplitSeq(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTLP headers: %q is not key=value", strings.TrimSpace(pair))
		}
		value, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTLP headers: the value of %s: %w", k, err)
		}
		headers[k] = value
	}
	return headers, nil
}
