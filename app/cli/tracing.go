package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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
	endpoint, ok := lookup(envOTLPTracesEndpoint)
	if !ok || endpoint == "" {
		base, ok := lookup(envOTLPEndpoint)
		if !ok || base == "" {
			return nil, nil, "", nil
		}
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, "", fmt.Errorf("OTLP traces endpoint %q must be an http(s) URL", endpoint)
	}
	raw, ok := lookup(envOTLPTracesHeaders)
	if !ok || raw == "" {
		raw, _ = lookup(envOTLPHeaders)
	}
	headers, err := parseOTLPHeaders(raw)
	if err != nil {
		return nil, nil, "", err
	}
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(headers))
	if err != nil {
		return nil, nil, "", fmt.Errorf("OTLP trace exporter: %w", err)
	}
	service, ok := lookup(envServiceName)
	if !ok || service == "" {
		service = "warden"
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", service))),
	)
	// Print where the spans go, never the credentials a URL may carry.
	u.User = nil
	return sdk, sdk.Shutdown, u.String(), nil
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
