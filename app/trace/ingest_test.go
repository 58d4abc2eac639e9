package trace_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/trace"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// otlpSpan returns a valid span of trace.
func otlpSpan(traceID []byte, name string, attrs ...*commonpb.KeyValue) *tracepb.Span {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	now := uint64(time.Now().UnixNano())
	return &tracepb.Span{TraceId: traceID, SpanId: id, Name: name, StartTimeUnixNano: now - 1e6, EndTimeUnixNano: now, Attributes: attrs}
}

func newID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

// request wraps spans in an export request with a resource.
func request(spans ...*tracepb.Span) *collectortrace.ExportTraceServiceRequest {
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "test"}, Spans: spans}},
	}}}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestBadInput sends what a broken or hostile sender would and checks the
// answer, that nothing of a refused request is stored, and that the
// service still answers afterwards.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), nil)
	tenant := newTenant()
	key := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
	viewer := apiKey(t, h.st, tenant, "viewer", "default", "viewer", "")
	good := marshal(t, request(otlpSpan(newID(), "ok")))

	many := make([]*commonpb.KeyValue, 10_000)
	for i := range many {
		many[i] = str(fmt.Sprintf("k%d", i), "v")
	}
	goodSpan := otlpSpan(newID(), "kept")
	tenThousand := marshal(t, request(otlpSpan(newID(), "huge", many...), goodSpan))

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(good)
	require.NoError(t, zw.Close())

	tests := []struct {
		name        string
		key         string
		contentType string
		body        func() io.Reader
		length      int64
		header      map[string]string
		status      int
		contains    string
		stored      int
	}{
		{name: "truncated protobuf", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return bytes.NewReader(good[:len(good)-7]) },
			status: 400, contains: "not an OTLP ExportTraceServiceRequest"},
		{name: "not JSON", key: key, contentType: "application/json", body: func() io.Reader { return strings.NewReader(`{"resourceSpans": [`) },
			status: 400, contains: "not JSON"},
		{name: "JSON id not hex", key: key, contentType: "application/json", body: func() io.Reader {
			return strings.NewReader(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"not-hex","spanId":"0102030405060708","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`)
		}, status: 400, contains: "traceId"},
		{name: "100 MiB body with a length", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return io.LimitReader(zeros{}, 100<<20) },
			length: 100 << 20, status: 413, contains: "PayloadTooLarge"},
		{name: "100 MiB body chunked", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return io.LimitReader(zeros{}, 100<<20) },
			length: -1, status: 413, contains: "PayloadTooLarge"},
		{name: "invalid gzip", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return strings.NewReader("not gzip") },
			header: map[string]string{"Content-Encoding": "gzip"}, status: 400, contains: "gzip"},
		{name: "gzip", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return bytes.NewReader(gz.Bytes()) },
			header: map[string]string{"Content-Encoding": "gzip"}, status: 200, stored: 1},
		{name: "10,000 attributes", key: key, contentType: "application/x-protobuf", body: func() io.Reader { return bytes.NewReader(tenThousand) },
			status: 200, stored: 1},
		{name: "no credential", contentType: "application/x-protobuf", body: func() io.Reader { return bytes.NewReader(good) }, status: 401, contains: "Unauthenticated"},
		{name: "viewer may not send", key: viewer, contentType: "application/json", body: func() io.Reader { return strings.NewReader(`{}`) }, status: 403, contains: "Forbidden"},
		{name: "other namespace", key: key, contentType: "application/json", body: func() io.Reader { return strings.NewReader(`{}`) },
			header: map[string]string{trace.NamespaceHeader: "prod"}, status: 403, contains: "scoped to namespace"},
		{name: "not OTLP", key: key, contentType: "text/plain", body: func() io.Reader { return strings.NewReader("hi") }, status: 400, contains: "Content-Type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := spanCount(t, h.st, tenant)
			req, err := http.NewRequest(http.MethodPost, h.httpURL+"/v1/traces", tc.body())
			require.NoError(t, err)
			req.ContentLength = tc.length
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			req.Header.Set("Content-Type", tc.contentType)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode, string(b))
			if tc.contentType == "application/x-protobuf" && tc.status != 200 {
				var st status.Status
				require.NoError(t, proto.Unmarshal(b, &st), "OTLP/HTTP errors are a google.rpc.Status")
				require.Contains(t, st.GetMessage(), tc.contains)
			} else {
				require.Contains(t, string(b), tc.contains)
			}
			require.Equal(t, before+tc.stored, spanCount(t, h.st, tenant), "stored spans")
		})
	}

	t.Run("partial success names the rejected span", func(t *testing.T) {
		resp, body := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(tenThousand), nil)
		require.Equal(t, 200, resp.StatusCode)
		var out collectortrace.ExportTraceServiceResponse
		require.NoError(t, proto.Unmarshal([]byte(body), &out))
		require.Equal(t, int64(1), out.GetPartialSuccess().GetRejectedSpans())
		require.Contains(t, out.GetPartialSuccess().GetErrorMessage(), "10000 attributes, more than the limit of 256")
		rows, err := h.st.SpanList(context.Background(), tenant, store.SpanFilter{Name: "huge", Status: -1})
		require.NoError(t, err)
		require.Empty(t, rows, "the span over the limit is not stored, not even truncated")
	})

	t.Run("gRPC", func(t *testing.T) {
		conn, err := grpc.NewClient(h.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
		require.NoError(t, err)
		defer conn.Close()
		c := collectortrace.NewTraceServiceClient(conn)
		authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
		before := spanCount(t, h.st, tenant)

		_, err = c.Export(context.Background(), request(otlpSpan(newID(), "x")))
		require.Equal(t, codes.Unauthenticated, grpcstatus.Code(err), "%v", err)

		big := otlpSpan(newID(), "big", str("blob", strings.Repeat("x", 20<<20)))
		_, err = c.Export(authed, request(big))
		require.Equal(t, codes.ResourceExhausted, grpcstatus.Code(err), "a 20 MiB message: %v", err)

		bad := otlpSpan([]byte{1, 2, 3}, "bad id")
		res, err := c.Export(authed, request(bad, otlpSpan(newID(), "fine")))
		require.NoError(t, err)
		require.Equal(t, int64(1), res.GetPartialSuccess().GetRejectedSpans())
		require.Contains(t, res.GetPartialSuccess().GetErrorMessage(), "trace_id must be 16 bytes")
		require.Equal(t, before+1, spanCount(t, h.st, tenant))
	})

	// The process is still up and serving.
	resp, _ := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(good), nil)
	require.Equal(t, 200, resp.StatusCode)
}

// blockingStore holds every SpanWrite until release is closed.
type blockingStore struct {
	store.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingStore) SpanWrite(ctx context.Context, tenant string, batch *store.SpanBatch) error {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return b.Store.SpanWrite(ctx, tenant, batch)
}

// TestBackpressure fills the write queue and checks that senders are told
// to come back (429 with Retry-After, RESOURCE_EXHAUSTED with RetryInfo)
// rather than queued without bound, and that what was accepted is stored.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	st := &blockingStore{Store: openSQLite(t), entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, st, func(c *trace.Config) { c.QueueSpans = 12; c.Writers = 1; c.RetryAfter = 2 * time.Second })
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(st.release) }) }
	t.Cleanup(release) // runs before the harness's cleanup, which waits for the writer
	tenant := newTenant()
	key := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
	spans := func(n int) []byte {
		var ss []*tracepb.Span
		id := newID()
		for i := range n {
			ss = append(ss, otlpSpan(id, fmt.Sprint("s", i)))
		}
		return marshal(t, request(ss...))
	}
	// The first batch is taken by the writer, which blocks (it counts
	// until written); the second fills the queue.
	done := make(chan int, 2)
	go func() {
		resp, _ := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(spans(4)), nil)
		done <- resp.StatusCode
	}()
	<-st.entered
	go func() {
		resp, _ := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(spans(8)), nil)
		done <- resp.StatusCode
	}()
	require.Eventually(t, func() bool {
		var b strings.Builder
		_ = h.svc.Metrics().WritePrometheus(&b)
		return strings.Contains(b.String(), "warden_trace_queue_spans 12")
	}, 10*time.Second, 5*time.Millisecond)

	resp, body := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(spans(1)), nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
	var sts status.Status
	require.NoError(t, proto.Unmarshal([]byte(body), &sts))
	require.Contains(t, sts.GetMessage(), "RateLimited")

	conn, err := grpc.NewClient(h.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = collectortrace.NewTraceServiceClient(conn).Export(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key),
		request(otlpSpan(newID(), "x")))
	require.Equal(t, codes.ResourceExhausted, grpcstatus.Code(err))
	var retry *errdetails.RetryInfo
	for _, d := range grpcstatus.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "RESOURCE_EXHAUSTED carries RetryInfo")
	require.Equal(t, 2*time.Second, retry.GetRetryDelay().AsDuration())

	release()
	require.Equal(t, 200, <-done)
	require.Equal(t, 200, <-done)
	require.Equal(t, 12, spanCount(t, h.st, tenant))
}

// TestOCSF stores OCSF API Activity events and reads them back; an invalid
// event refuses its whole request.
func TestOCSF(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), nil)
	tenant, other := newTenant(), newTenant()
	key := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
	stranger := apiKey(t, h.st, other, "admin", "*", "admin", "")
	event := func(op string, ts int64) string {
		return fmt.Sprintf(`{"class_uid":6003,"category_uid":6,"activity_id":1,"type_uid":600301,"severity_id":1,"status_id":1,"time":%d,
			"metadata":{"version":"1.3.0","product":{"name":"s3","vendor_name":"AWS"}},"actor":{"user":{"name":"alice"}},
			"api":{"operation":%q,"service":{"name":"s3"}},"src_endpoint":{"ip":"10.0.0.1"}}`, ts, op)
	}
	now := time.Now().UnixMilli()
	resp, body := h.post(t, key, "/v1/ocsf", "application/json", strings.NewReader("["+event("PutObject", now-10)+","+event("GetObject", now)+"]"), nil)
	require.Equal(t, 200, resp.StatusCode, body)
	require.JSONEq(t, `{"accepted":2}`, body)

	bad := []struct{ name, body, contains string }{
		{"missing api.operation", strings.Replace(event("x", now), `"operation":"x",`, "", 1), "api.operation"},
		{"wrong type_uid", strings.Replace(event("x", now), "600301", "600302", 1), "type_uid"},
		{"not 1.x", strings.Replace(event("x", now), `"1.3.0"`, `"2.0.0"`, 1), "OCSF 1.x"},
		{"missing class", `{"time":1}`, "class_uid"},
		{"not JSON", `[{`, "not a JSON array"},
	}
	for _, tc := range bad {
		resp, body := h.post(t, key, "/v1/ocsf", "application/json", strings.NewReader("["+event("Fine", now)+","+strings.TrimPrefix(tc.body, "[")+"]"), nil)
		if tc.name == "not JSON" {
			resp, body = h.post(t, key, "/v1/ocsf", "application/json", strings.NewReader(tc.body), nil)
		}
		require.Equal(t, 400, resp.StatusCode, tc.name+": "+body)
		require.Contains(t, body, tc.contains, tc.name)
	}

	var list trace.OCSFEventList
	code, body := h.get(t, key, "/v1/ocsf?class_uid=6003&limit=1", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Items, 1, "only the two good events are stored; one per page")
	require.Equal(t, "GetObject", list.Items[0].Event["api"].(map[string]any)["operation"])
	require.NotEmpty(t, list.Metadata.Continue)
	code, body = h.get(t, key, "/v1/ocsf?limit=5&continue="+list.Metadata.Continue, &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Items, 1)
	require.Equal(t, "PutObject", list.Items[0].Event["api"].(map[string]any)["operation"])

	code, body = h.get(t, stranger, "/v1/ocsf", &list)
	require.Equal(t, 200, code, body)
	require.Empty(t, list.Items, "another tenant sees none")
}

// TestPrometheus serves the operational metrics without a credential.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), nil)
	key := apiKey(t, h.st, newTenant(), "sender", "default", "editor", "")
	resp, _ := h.post(t, key, "/v1/traces", "application/x-protobuf", bytes.NewReader(marshal(t, request(otlpSpan(newID(), "x")))), nil)
	require.Equal(t, 200, resp.StatusCode)
	r, err := http.Get(h.queryURL + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	require.Equal(t, 200, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "text/plain; version=0.0.4")
	require.Contains(t, string(b), `warden_trace_spans_received_total{transport="http"} 1`)
	require.Contains(t, string(b), "warden_trace_spans_stored_total 1")
	require.Contains(t, string(b), "# TYPE warden_trace_write_seconds histogram")
}

// rawCodec sends []byte as is, so a test can put a broken message on the
// wire; it answers into a response message.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// TestGRPCTruncated sends a truncated protobuf over gRPC: refused as
// INVALID_ARGUMENT, nothing stored, the server still serves.
func TestGRPCTruncated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t), nil)
	tenant := newTenant()
	key := apiKey(t, h.st, tenant, "sender", "default", "editor", "")
	conn, err := grpc.NewClient(h.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	good := marshal(t, request(otlpSpan(newID(), "a"), otlpSpan(newID(), "b")))
	var out collectortrace.ExportTraceServiceResponse
	err = conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", good[:len(good)-5], &out, grpc.ForceCodecV2(rawCodec{}))
	require.Equal(t, codes.InvalidArgument, grpcstatus.Code(err), "%v", err)
	require.Contains(t, err.Error(), "not an OTLP ExportTraceServiceRequest")
	require.Contains(t, err.Error(), "nothing was stored")
	require.Zero(t, spanCount(t, h.st, tenant))
	require.NoError(t, conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", good, &out, grpc.ForceCodecV2(rawCodec{})))
	require.Equal(t, 2, spanCount(t, h.st, tenant))
}
