package trace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/warden-dev/warden/app/store"
)

// benchHarness is a harness on SQLite with a sender key.
func benchHarness(b *testing.B) (*harness, string, string) {
	b.Helper()
	return benchHarnessOn(b, openSQLite(b))
}

// benchHarnessOn is a harness on st with a sender key.
func benchHarnessOn(b *testing.B, st store.Store) (*harness, string, string) {
	b.Helper()
	h := newHarness(b, st, nil)
	tenant := newTenant()
	return h, tenant, apiKey(b, st, tenant, "k", "*", "admin", "")
}

// benchStores are the stores the read benchmarks run on.
var benchStores = []struct {
	name string
	open func(testing.TB) store.Store
}{{"sqlite", openSQLite}, {"postgres", openPostgres}}

// BenchmarkIngestGRPC exports 512-span requests over OTLP/gRPC, each
// acknowledged once committed, from 4 concurrent senders; spans/s is the
// figure docs/performance.md reports.
func BenchmarkIngestGRPC(b *testing.B) {
	h, _, key := benchHarness(b)
	conn, err := grpc.NewClient(h.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	c := collectortrace.NewTraceServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	b.SetParallelism(1) // GOMAXPROCS senders
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			spans := make([]*tracepb.Span, 512)
			id := newID()
			for i := range spans {
				if i%8 == 0 {
					id = newID()
				}
				spans[i] = otlpSpan(id, "execute_tool crm.get", str("warden.tool", fmt.Sprint("crm.t", i%50)), str("warden.agent", fmt.Sprint("bot", i%10)))
			}
			if _, err := c.Export(ctx, request(spans...)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*512)/time.Since(start).Seconds(), "spans/s")
}

// BenchmarkTraceGet1000 reads a 1,000-span trace through the query API,
// on each store.
func BenchmarkTraceGet1000(b *testing.B) {
	for _, s := range benchStores {
		b.Run(s.name, func(b *testing.B) { benchTraceGet1000(b, s.open(b)) })
	}
}

func benchTraceGet1000(b *testing.B, st store.Store) {
	h, tenant, key := benchHarnessOn(b, st)
	id := newID()
	var spans []*tracepb.Span
	for i := range 1000 {
		spans = append(spans, otlpSpan(id, fmt.Sprint("span ", i), str("warden.tool", "crm.get"), str("k1", "v1"), str("k2", "v2")))
	}
	conn, err := grpc.NewClient(h.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
	_, err = collectortrace.NewTraceServiceClient(conn).Export(ctx, request(spans...))
	require.NoError(b, err)
	require.Equal(b, 1000, spanCount(b, h.st, tenant))
	path := "/v1/traces/" + fmt.Sprintf("%x", id)
	b.ResetTimer()
	for b.Loop() {
		code, body := h.get(b, key, path, nil)
		if code != http.StatusOK {
			b.Fatal(body)
		}
	}
}

// BenchmarkToolcallsTop runs the four metrics queries of toolcalls top
// over a day of rollups holding 1,000,000 calls of 10 agents and 50 tools,
// on each store.
func BenchmarkToolcallsTop(b *testing.B) {
	for _, s := range benchStores {
		b.Run(s.name, func(b *testing.B) { benchToolcallsTop(b, s.open(b)) })
	}
}

func benchToolcallsTop(b *testing.B, st store.Store) {
	h, tenant, key := benchHarnessOn(b, st)
	now := time.Now()
	// The minute rows and the hour rows the ingest would write.
	var batch store.SpanBatch
	hours := rollupSums{}
	calls := 0
	for m := int64(0); m < 24*60 && calls < 1_000_000; m++ {
		minute := now.Add(-time.Duration(m)*time.Minute).Unix() / 60 * 60
		for a := range 10 {
			for tool := range 50 {
				if (a+tool+int(m))%7 != 0 {
					continue // about 100 of the 500 pairs call in a given minute
				}
				r := store.SpanRollup{Namespace: "default", Agent: fmt.Sprint("bot", a), Tool: fmt.Sprint("crm.t", tool), Minute: minute, Calls: 10, Errors: int64(tool % 3), LatencySum: 120, Cost: 0.01}
				r.Hist[store.SpanHistBucket(12)] = 10
				batch.Rollups = append(batch.Rollups, r)
				calls += 10
				hour := r
				hour.Width, hour.Minute = store.RollupHour, minute/3600*3600
				hours.merge(hour)
			}
		}
	}
	for _, r := range hours {
		batch.Rollups = append(batch.Rollups, *r)
	}
	require.NoError(b, h.st.SpanWrite(context.Background(), tenant, &batch))
	b.ReportMetric(float64(calls), "calls")
	queries := []string{"sum(calls[1d]) by (tool)", "error_rate(calls[1d]) by (tool)", "p95(latency[1d]) by (tool)", "sum(cost[1d]) by (tool)"}
	b.ResetTimer()
	for b.Loop() {
		for _, q := range queries {
			if code, body := h.get(b, key, "/v1/metrics?query="+url.QueryEscape(q), nil); code != http.StatusOK {
				b.Fatal(body)
			}
		}
	}
}

// rollupSums adds rollups up by bucket and dimensions.
type rollupSums map[[4]any]*store.SpanRollup

func (m rollupSums) merge(r store.SpanRollup) {
	k := [4]any{r.Minute, r.Agent, r.Tool, r.Namespace}
	if have := m[k]; have != nil {
		have.Add(&r)
		return
	}
	m[k] = &r
}
