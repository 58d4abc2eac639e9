package trace

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/store"
)

// captured records the raw export requests an SDK exporter sent.
type captured struct {
	mu   sync.Mutex
	reqs [][]byte
}

func (c *captured) add(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, bytes.Clone(b))
}

func (c *captured) Export(_ context.Context, req *rawRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.add(req.b)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// sdkSpans makes agent traces with the SDK over exp: attributes of every
// type, slices, events, links, a trace state, an error status, dropped
// attributes, and a resource naming an agent and an execution.
func sdkSpans(t *testing.T, exp sdktrace.SpanExporter) {
	t.Helper()
	ctx := context.Background()
	res := sdkresource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "agents"),
		attribute.String("gen_ai.agent.name", "resource-agent"), attribute.String("gen_ai.conversation.id", "conv-7"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeCountLimit: 12, EventCountLimit: 8, LinkCountLimit: 4,
			AttributePerEventCountLimit: 6, AttributePerLinkCountLimit: 4, AttributeValueLengthLimit: -1}))
	defer func() { require.NoError(t, tp.Shutdown(ctx)) }()
	tr := tp.Tracer("agent-sdk", oteltrace.WithInstrumentationVersion("1.2.3"), oteltrace.WithSchemaURL("https://example.com/s"))
	ts, err := oteltrace.ParseTraceState("vendor=abc,other=1")
	require.NoError(t, err)
	for run := range 3 {
		pctx := ctx
		if run == 1 {
			sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: oteltrace.TraceID{1, 2, 3}, SpanID: oteltrace.SpanID{4, 5},
				TraceFlags: oteltrace.FlagsSampled, TraceState: ts, Remote: true})
			pctx = oteltrace.ContextWithRemoteSpanContext(ctx, sc)
		}
		rctx, root := tr.Start(pctx, "invoke_agent support-bot", oteltrace.WithSpanKind(oteltrace.SpanKindServer),
			oteltrace.WithAttributes(attribute.String("warden.agent", "support-bot"), attribute.String("warden.execution", "exec-1"),
				attribute.StringSlice("tags", []string{"a", "b"}), attribute.IntSlice("ints", []int{1, 2}), attribute.BoolSlice("bools", []bool{true}),
				attribute.Float64Slice("floats", []float64{0.5})))
		_, model := tr.Start(rctx, "chat gpt-4o", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(
			attribute.String("gen_ai.request.model", "gpt-4o"), attribute.String("gen_ai.response.model", "gpt-4o-2024"),
			attribute.Int("gen_ai.usage.prompt_tokens", 120), attribute.Int("gen_ai.usage.completion_tokens", 30),
			attribute.Int("gen_ai.usage.cost", 2)))
		model.AddEvent("gen_ai.choice", oteltrace.WithAttributes(attribute.Int("index", 0), attribute.String("finish", "stop")))
		model.AddEvent("many", oteltrace.WithAttributes(attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3),
			attribute.Int("d", 4), attribute.Int("e", 5), attribute.Int("f", 6), attribute.Int("g", 7)))
		model.End()
		_, tool := tr.Start(rctx, "execute_tool stripe.refund", oteltrace.WithAttributes(attribute.String("gen_ai.tool.name", "stripe.refund"),
			attribute.String("warden.tool", "stripe.refund"), attribute.Bool("warden.approval_required", true), attribute.Float64("warden.cost", 0.25),
			attribute.String("note", strings.Repeat("x", 300)), attribute.Int("gen_ai.usage.total_tokens", 77)),
			oteltrace.WithLinks(oteltrace.Link{SpanContext: model.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("why", "follows")}}))
		tool.SetStatus(codes.Error, "ToolFailed")
		tool.End()
		_, wide := tr.Start(rctx, "wide", oteltrace.WithAttributes(attribute.String("warden.model", ""), attribute.String("warden.model", "m2")))
		for i := range 20 {
			wide.SetAttributes(attribute.Int("k"+strings.Repeat("i", i), i))
		}
		wide.End()
		root.End()
	}
}

// TestWireMatchesStructs decodes real SDK exports, over OTLP/gRPC and
// OTLP/HTTP, both ways: convertProto gives what proto.Unmarshal and
// convert give, for several sources and limits.
func TestWireMatchesStructs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	capt := &captured{}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{proto: encoding.GetCodecV2("proto")}))
	srv.RegisterService(&traceServiceDesc, capt)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	grpcExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(ln.Addr().String()), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	sdkSpans(t, grpcExp)

	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		capt.add(b)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer hs.Close()
	httpExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(hs.URL+"/v1/traces"))
	require.NoError(t, err)
	sdkSpans(t, httpExp)

	require.GreaterOrEqual(t, len(capt.reqs), 2)
	sources := []Source{{Tenant: "t", Namespace: "default"}, {Tenant: "t", Namespace: "prod", Agent: "bound-bot"}}
	limits := []Limits{{}, {MaxAttributes: 5}, {MaxValueBytes: 100}, {MaxEvents: 1, MaxLinks: 0}, {MaxAttributes: 6, MaxNameBytes: 5}}
	stored, rejected := 0, 0
	for _, raw := range capt.reqs {
		for _, src := range sources {
			for _, lim := range limits {
				lim = lim.WithDefaults()
				req := &collectortrace.ExportTraceServiceRequest{}
				require.NoError(t, proto.Unmarshal(raw, req))
				want := convert(req, src, lim)
				got, err := convertProto(raw, src, lim)
				require.NoError(t, err)
				requireSameConverted(t, want, got, true)
				stored += len(got.batch.Spans)
				rejected += int(got.rejected)
			}
		}
	}
	require.NotZero(t, stored)
	require.NotZero(t, rejected, "some limits reject spans")
}

// requireSameConverted asserts two conversions are the same; with
// sameBytes, the spans' Data byte for byte, else as messages.
func requireSameConverted(t *testing.T, want, got *converted, sameBytes bool) {
	t.Helper()
	require.Equal(t, want.rejected, got.rejected)
	require.Equal(t, want.reasons, got.reasons)
	require.Equal(t, want.batch.Resources, got.batch.Resources)
	sorted := func(rs []store.SpanRollup) []store.SpanRollup {
		set := newRollupSet()
		set.merge(rs)
		return set.list()
	}
	require.Equal(t, sorted(want.batch.Rollups), sorted(got.batch.Rollups))
	require.Len(t, got.batch.Spans, len(want.batch.Spans))
	for i := range want.batch.Spans {
		w, g := want.batch.Spans[i], got.batch.Spans[i]
		if sameBytes {
			require.True(t, bytes.Equal(w.Data, g.Data), "span %d: Data differs", i)
		} else {
			var wm, gm tracepb.Span
			require.NoError(t, proto.Unmarshal(w.Data, &wm))
			require.NoError(t, proto.Unmarshal(g.Data, &gm))
			require.True(t, proto.Equal(&wm, &gm), "span %d: Data differs", i)
		}
		w.Data, g.Data = nil, nil
		require.Equal(t, w, g)
	}
}

// FuzzConvertProto feeds arbitrary bytes to the protobuf transports'
// decoder: it fails exactly when proto.Unmarshal does, and otherwise
// gives what convert gives.
func FuzzConvertProto(f *testing.F) {
	b, _ := proto.Marshal(seedRequest())
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		src := Source{Tenant: "t", Namespace: "default"}
		lim := Limits{MaxAttributes: 4, MaxValueBytes: 16}.WithDefaults()
		got, err := convertProto(body, src, lim)
		req := &collectortrace.ExportTraceServiceRequest{}
		if perr := proto.Unmarshal(body, req); perr != nil {
			require.Error(t, err, "proto.Unmarshal fails (%v), convertProto does not", perr)
			return
		}
		require.NoError(t, err, "proto.Unmarshal succeeds, convertProto does not")
		requireSameConverted(t, convert(req, src, lim), got, false)
		for i := range got.batch.Spans {
			if _, err := rebuild(&got.batch.Spans[i]); err != nil {
				t.Fatalf("stored span does not decode: %v", err)
			}
		}
	})
}
