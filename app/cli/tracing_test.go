package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it decodes what the exporter
// sends, as a collector does.
type collector struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	auth     []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests = append(c.requests, &req)
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func TestOTLPTracerExports(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	env := map[string]string{
		envOTLPEndpoint:  srv.URL + "/",
		envOTLPHeaders:   "Authorization=Bearer%20s3cret, x-team = agents",
		envServiceName:   "warden-test",
		"UNRELATED_NAME": "x",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx := context.Background()
	tp, shutdown, endpoint, err := otlpTracer(ctx, lookup)
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/v1/traces", endpoint)

	_, span := tp.Tracer("test").Start(ctx, "warden.toolcall", trace.WithSpanKind(trace.SpanKindServer))
	span.AddEvent("toolCallRequest")
	span.End()
	require.NoError(t, shutdown(ctx)) // flushes the batch

	col.mu.Lock()
	defer col.mu.Unlock()
	require.Len(t, col.requests, 1)
	require.Equal(t, []string{"Bearer s3cret"}, col.auth)
	rs := col.requests[0].ResourceSpans
	require.Len(t, rs, 1)
	var service string
	for _, a := range rs[0].Resource.Attributes {
		if a.Key == "service.name" {
			service = a.Value.GetStringValue()
		}
	}
	require.Equal(t, "warden-test", service)
	spans := rs[0].ScopeSpans[0].Spans
	require.Len(t, spans, 1)
	require.Equal(t, "warden.toolcall", spans[0].Name)
	require.Equal(t, "toolCallRequest", spans[0].Events[0].Name)
}

func TestOTLPTracerConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		endpoint string
		err      string
	}{
		{name: "nothing set: no exporter", env: map[string]string{}},
		{name: "the traces endpoint is used as it is", env: map[string]string{envOTLPTracesEndpoint: "http://collector:4318/custom", envOTLPEndpoint: "http://other:4318"}, endpoint: "http://collector:4318/custom"},
		{name: "credentials in the URL are not printed", env: map[string]string{envOTLPTracesEndpoint: "https://user:pw@collector/v1/traces"}, endpoint: "https://collector/v1/traces"},
		{name: "not an http URL", env: map[string]string{envOTLPEndpoint: "collector:4317"}, err: "must be an http(s) URL"},
		{name: "a header without a value", env: map[string]string{envOTLPEndpoint: "http://collector:4318", envOTLPHeaders: "Authorization"}, err: `"Authorization" is not key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp, shutdown, endpoint, err := otlpTracer(context.Background(), func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.endpoint, endpoint)
			if tt.endpoint == "" {
				require.Nil(t, tp)
				return
			}
			require.NotNil(t, tp)
			require.NoError(t, shutdown(context.Background()))
		})
	}
}
