package router_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSpans: one span per model call with the GenAI semantic conventions'
// attributes, and never the prompt.
func TestSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	e := newEnv(t, envOptions{tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	e.oa.set("500")
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), map[string]any{"max_tokens": 50,
		"messages": []any{map[string]any{"role": "user", "content": "my secret prompt"}}}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "chat bot" {
			span = s
		}
	}
	require.NotNil(t, span, "a span named after the operation and the route")
	attrs := map[string]any{}
	for _, a := range span.Attributes() {
		attrs[string(a.Key)] = a.Value.AsInterface()
		require.NotContains(t, a.Value.String(), "secret prompt", "no prompt text in spans")
	}
	require.Equal(t, "chat", attrs["gen_ai.operation.name"])
	require.Equal(t, "anthropic", attrs["gen_ai.provider.name"], "the provider that answered")
	require.Equal(t, "claude-sonnet-4-5", attrs["gen_ai.response.model"])
	require.EqualValues(t, 20, attrs["gen_ai.usage.input_tokens"])
	require.EqualValues(t, 9, attrs["gen_ai.usage.output_tokens"])
	require.EqualValues(t, 50, attrs["gen_ai.request.max_tokens"])
	require.Equal(t, r.header.Get("Warden-Route-Decision"), attrs["warden.route.decision"])
	var names []string
	for _, ev := range span.Events() {
		names = append(names, ev.Name)
	}
	require.Contains(t, names, "ProviderSwitched")
}
