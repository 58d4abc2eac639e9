package trace_test

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/trace"
)

// sentTrace is what a test made with the SDK: spans by name.
type sentTrace struct {
	id    oteltrace.TraceID
	spans map[string]oteltrace.SpanContext
}

// emit makes one agent trace with the SDK over exp: a root, a model call,
// a tool call that fails, with attributes, an event and a link, and
// returns it after the exporter has sent it.
func emit(t *testing.T, exp sdktrace.SpanExporter, service string) sentTrace {
	t.Helper()
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", service), attribute.String("warden.tenant", "someone-else"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("agent-sdk", oteltrace.WithInstrumentationVersion("1.2.3"))
	out := sentTrace{spans: map[string]oteltrace.SpanContext{}}
	ctx, root := tr.Start(ctx, "agent.run", oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithAttributes(attribute.String("warden.execution", "exec-42"), attribute.StringSlice("tags", []string{"a", "b"})))
	_, model := tr.Start(ctx, "chat gpt-4o", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(
		attribute.String("gen_ai.request.model", "gpt-4o"), attribute.Int("gen_ai.usage.input_tokens", 120),
		attribute.Int("gen_ai.usage.output_tokens", 30), attribute.Float64("warden.cost", 0.0042)))
	model.AddEvent("gen_ai.choice", oteltrace.WithAttributes(attribute.Int("index", 0)))
	model.End()
	_, tool := tr.Start(ctx, "tool stripe.refund", oteltrace.WithAttributes(attribute.String("warden.tool", "stripe.refund"),
		attribute.Bool("warden.approval_required", true)), oteltrace.WithLinks(oteltrace.Link{SpanContext: model.SpanContext()}))
	tool.SetStatus(codes.Error, "ToolFailed")
	tool.End()
	root.End()
	out.id = root.SpanContext().TraceID()
	out.spans["agent.run"], out.spans["chat gpt-4o"], out.spans["tool stripe.refund"] = root.SpanContext(), model.SpanContext(), tool.SpanContext()
	return out
}

// checkTrace reads the trace back from the query API and checks it whole.
func checkTrace(t *testing.T, h *harness, key string, sent sentTrace, agent, service string) {
	t.Helper()
	var got trace.Trace
	code, body := h.get(t, key, "/v1/traces/"+sent.id.String(), &got)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, sent.id.String(), got.TraceID)
	require.Len(t, got.Spans, 3)
	by := map[string]trace.SpanView{}
	for _, s := range got.Spans {
		by[s.Name] = s
	}
	root, model, tool := by["agent.run"], by["chat gpt-4o"], by["tool stripe.refund"]
	require.Equal(t, "agent.run", got.Spans[0].Name, "oldest first")
	require.Equal(t, sent.spans["agent.run"].SpanID().String(), root.SpanID)
	require.Empty(t, root.ParentSpanID)
	require.Equal(t, "server", root.Kind)
	require.Equal(t, "exec-42", root.Execution)
	require.Equal(t, []any{"a", "b"}, root.Attributes["tags"])
	require.Equal(t, service, root.Service)
	require.Equal(t, agent, root.Agent)
	require.Equal(t, map[string]any{"service.name": service, "warden.tenant": "someone-else"}, root.Resource, "resource attributes come back")
	require.Equal(t, &trace.Scope{Name: "agent-sdk", Version: "1.2.3"}, root.Scope)

	require.Equal(t, root.SpanID, model.ParentSpanID)
	require.Equal(t, "gpt-4o", model.Model)
	require.Equal(t, int64(150), model.Tokens)
	require.Equal(t, 0.0042, model.Cost)
	require.Equal(t, "client", model.Kind)
	require.Len(t, model.Events, 1)
	require.Equal(t, "gen_ai.choice", model.Events[0].Name)
	require.Equal(t, float64(0), model.Events[0].Attributes["index"])

	require.Equal(t, "stripe.refund", tool.Tool)
	require.Equal(t, trace.SpanStatus{Code: "error", Message: "ToolFailed"}, tool.Status)
	require.Equal(t, true, tool.Attributes["warden.approval_required"])
	require.Len(t, tool.Links, 1)
	require.Equal(t, model.SpanID, tool.Links[0].SpanID)
	require.True(t, !tool.StartTime.IsZero() && !tool.EndTime.Before(tool.StartTime))

	// The OTLP/JSON form carries the same spans.
	var td struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID string `json:"traceId"`
					SpanID  string `json:"spanId"`
					Name    string `json:"name"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	code, body = h.get(t, key, "/v1/traces/"+sent.id.String()+"?format=otlp", &td)
	require.Equal(t, http.StatusOK, code, body)
	var names []string
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				require.Equal(t, sent.id.String(), s.TraceID, "ids are hex in OTLP/JSON")
				require.Equal(t, sent.spans[s.Name].SpanID().String(), s.SpanID)
				names = append(names, s.Name)
			}
		}
	}
	sort.Strings(names)
	require.Equal(t, []string{"agent.run", "chat gpt-4o", "tool stripe.refund"}, names)
}

// TestSDKExporters sends traces with the real OpenTelemetry exporters over
// OTLP/HTTP and OTLP/gRPC and reads them back whole, on both backends, and
// checks that no other tenant can read them.
func TestSDKExporters(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b.open(t), nil)
			tenant, other := newTenant(), newTenant()
			writer := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
			agentKey := apiKey(t, h.st, tenant, "bot-key", "default", "editor", "support-bot")
			reader := apiKey(t, h.st, tenant, "reader", "default", "viewer", "")
			stranger := apiKey(t, h.st, other, "admin", "*", "admin", "")
			ctx := context.Background()

			httpExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(h.httpURL+"/v1/traces"),
				otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + writer}), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
			require.NoError(t, err)
			sentHTTP := emit(t, httpExp, "http-agent")

			grpcExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(h.grpcAddr), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithHeaders(map[string]string{"authorization": "Bearer " + agentKey}), otlptracegrpc.WithCompressor("gzip"))
			require.NoError(t, err)
			sentGRPC := emit(t, grpcExp, "grpc-agent")

			checkTrace(t, h, reader, sentHTTP, "", "http-agent")
			// The key bound to an agent names the agent of its spans.
			checkTrace(t, h, reader, sentGRPC, "support-bot", "grpc-agent")

			// The tenant comes from the credential: the resource's
			// warden.tenant named another, and nothing went there.
			require.Zero(t, spanCount(t, h.st, "someone-else"))
			require.Equal(t, 6, spanCount(t, h.st, tenant))

			// Another tenant's admin sees nothing of it.
			code, body := h.get(t, stranger, "/v1/traces/"+sentHTTP.id.String(), nil)
			require.Equal(t, http.StatusNotFound, code, body)
			var list trace.TraceList
			code, body = h.get(t, stranger, "/v1/traces", &list)
			require.Equal(t, http.StatusOK, code, body)
			require.Empty(t, list.Items)
			var m trace.MetricResult
			code, body = h.get(t, stranger, "/v1/metrics?query="+url.QueryEscape("sum(calls[1h])"), &m)
			require.Equal(t, http.StatusOK, code, body)
			require.Empty(t, m.Result)

			// The owner's reader lists both traces, newest first.
			code, body = h.get(t, reader, "/v1/traces", &list)
			require.Equal(t, http.StatusOK, code, body)
			require.Len(t, list.Items, 2)
			require.Equal(t, sentGRPC.id.String(), list.Items[0].TraceID)
			require.Equal(t, trace.TraceSummary{TraceID: sentGRPC.id.String(), Root: "agent.run", Service: "grpc-agent",
				StartTime: list.Items[0].StartTime, DurationMs: list.Items[0].DurationMs, Spans: 3, Errors: 1}, list.Items[0])

			// By selector, and an execution's spans.
			code, body = h.get(t, reader, "/v1/traces?selector="+url.QueryEscape("agent=support-bot,tool=stripe.refund,status=error"), &list)
			require.Equal(t, http.StatusOK, code, body)
			require.Len(t, list.Items, 1)
			require.Equal(t, sentGRPC.id.String(), list.Items[0].TraceID)
			var spans trace.SpanList
			code, body = h.get(t, reader, "/v1/spans?execution=exec-42", &spans)
			require.Equal(t, http.StatusOK, code, body)
			require.Len(t, spans.Items, 2, "the roots of both traces name exec-42")

			// A key of another namespace reads nothing here.
			otherNS := apiKey(t, h.st, tenant, "elsewhere", "prod", "viewer", "")
			code, body = h.get(t, otherNS, "/v1/traces/"+sentHTTP.id.String(), nil)
			require.Equal(t, http.StatusNotFound, code, body)
			code, body = h.get(t, otherNS, "/v1/traces/"+sentHTTP.id.String()+"?namespace=default", nil)
			require.Equal(t, http.StatusForbidden, code, body)

			// Metrics over what was sent: one tool call that failed,
			// one model call.
			code, body = h.get(t, reader, "/v1/metrics?query="+url.QueryEscape("error_rate(calls[1h]) by (tool)"), &m)
			require.Equal(t, http.StatusOK, code, body)
			rates := map[string]float64{}
			for _, s := range m.Result {
				rates[s.Metric["tool"]] = s.Value
			}
			require.Equal(t, map[string]float64{"stripe.refund": 1, "": 0}, rates)
			code, body = h.get(t, reader, "/v1/metrics?query="+url.QueryEscape(`sum(tokens{model="gpt-4o"}[1h])`), &m)
			require.Equal(t, http.StatusOK, code, body)
			require.Len(t, m.Result, 1)
			require.Equal(t, float64(300), m.Result[0].Value)
		})
	}
}
