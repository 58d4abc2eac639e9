package trace_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/trace"
)

// TestExporter writes Warden's own spans into the store through the SDK:
// the step spans inherit the tenant of their call.
func TestExporter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), nil)
	tenant := newTenant()
	reader := apiKey(t, h.st, tenant, "reader", "default", "viewer", "")
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(trace.TenantProcessor{}), sdktrace.WithSyncer(h.svc.Exporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("warden/gateway")
	ctx, call := tr.Start(context.Background(), "warden.toolcall", sdktraceAttrs(tenant)...)
	_, step := tr.Start(ctx, "warden.step.policy")
	step.End()
	call.End()
	_, orphan := tr.Start(context.Background(), "no tenant")
	orphan.End()

	require.Eventually(t, func() bool { return spanCount(t, h.st, tenant) == 2 }, 10*time.Second, 5*time.Millisecond)
	var got trace.Trace
	code, body := h.get(t, reader, "/v1/traces/"+call.SpanContext().TraceID().String(), &got)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, got.Spans, 2)
	require.Equal(t, "warden.toolcall", got.Spans[0].Name)
	require.Equal(t, "crm.refund", got.Spans[0].Tool)
	require.Equal(t, "support-bot", got.Spans[0].Agent)
	require.Equal(t, tenant, got.Spans[1].Attributes[trace.AttrTenant], "the step inherited its call's tenant")
	require.Equal(t, got.Spans[0].SpanID, got.Spans[1].ParentSpanID)
}

func sdktraceAttrs(tenant string) []oteltrace.SpanStartOption {
	return []oteltrace.SpanStartOption{oteltrace.WithAttributes(attribute.String(trace.AttrTenant, tenant), attribute.String(trace.AttrNamespace, "default"),
		attribute.String("warden.tool", "crm.refund"), attribute.String("warden.agent", "support-bot"))}
}
