package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/trace"
)

// OTLPOptions configure RunOTLP.
type OTLPOptions struct {
	// Store is the store URL; empty means a fresh SQLite file.
	Store string
	// Duration is the length of the ingest phase.
	Duration time.Duration
	// Senders is the number of concurrent OTLP/gRPC senders.
	Senders int
	// Batch is the spans of one export request.
	Batch int
	// TraceSpans is the size of the trace GET /v1/traces/{id} reads.
	TraceSpans int
	// Reads is how many times each query is timed.
	Reads int
	// CPUProfile, when set, receives a CPU profile of the ingest phase.
	CPUProfile string
}

// WithDefaults fills in zero fields.
func (o OTLPOptions) WithDefaults() OTLPOptions {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Senders <= 0 {
		o.Senders = 4
	}
	if o.Batch <= 0 {
		o.Batch = 512
	}
	if o.TraceSpans <= 0 {
		o.TraceSpans = 1000
	}
	if o.Reads <= 0 {
		o.Reads = 200
	}
	return o
}

// OTLPResult holds the measurements of RunOTLP.
type OTLPResult struct {
	Spans   int64
	Calls   int64
	Elapsed time.Duration
	// Refused counts exports answered RESOURCE_EXHAUSTED (retried).
	Refused int64
	// CPU is the process's processor time during the ingest phase.
	CPU time.Duration
	// TraceGet and Top are the latencies of GET /v1/traces/{id} of a
	// TraceSpans-span trace and of the queries of `toolcalls top`.
	TraceGet, Top Result
}

// SpansPerSecond is the ingest rate.
func (r OTLPResult) SpansPerSecond() float64 { return float64(r.Spans) / r.Elapsed.Seconds() }

// The bench's agents and tools: a trace is an agent run, tool calls and
// model calls.
var (
	benchAgents = []string{"support-bot", "billing-bot", "triage", "research", "scheduler", "coder", "reviewer", "sales", "ops", "hr"}
	benchTools  = func() []string {
		var out []string
		for _, sys := range []string{"crm", "stripe", "github", "jira", "slack"} {
			for _, act := range []string{"get", "list", "create", "update", "delete", "search", "refund", "comment", "close", "notify"} {
				out = append(out, sys+"."+act)
			}
		}
		return out
	}()
	benchModels = []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet", "llama-70b"}
)

func kvs(pairs ...any) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		v := &commonpb.AnyValue{}
		switch x := pairs[i+1].(type) {
		case string:
			v.Value = &commonpb.AnyValue_StringValue{StringValue: x}
		case int:
			v.Value = &commonpb.AnyValue_IntValue{IntValue: int64(x)}
		case float64:
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: x}
		case bool:
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: x}
		}
		out = append(out, &commonpb.KeyValue{Key: pairs[i].(string), Value: v})
	}
	return out
}

// benchRequest builds one export request of n spans: traces of 8 spans
// (an agent run, four tool calls, three model calls), seeded by seq.
func benchRequest(n int, seq uint64) *collectortrace.ExportTraceServiceRequest {
	spans := make([]*tracepb.Span, 0, n)
	now := uint64(time.Now().UnixNano())
	var traceID []byte
	var root []byte
	for i := range n {
		k := seq*uint64(n) + uint64(i)
		if i%8 == 0 {
			traceID = make([]byte, 16)
			_, _ = rand.Read(traceID)
			root = nil
		}
		id := make([]byte, 8)
		binary.BigEndian.PutUint64(id, k+1)
		agent := benchAgents[k/8%uint64(len(benchAgents))]
		sp := &tracepb.Span{TraceId: traceID, SpanId: id, ParentSpanId: root, StartTimeUnixNano: now - 5e6, EndTimeUnixNano: now - 5e6 + (k%97+1)*1e5,
			Kind: tracepb.Span_SPAN_KIND_INTERNAL}
		switch i % 8 {
		case 0:
			sp.Name, sp.Kind = "invoke_agent "+agent, tracepb.Span_SPAN_KIND_SERVER
			sp.Attributes = kvs("warden.agent", agent, "warden.execution", fmt.Sprintf("exec-%d", k/8), "gen_ai.operation.name", "invoke_agent")
			root = id
		case 1, 3, 5, 7:
			tool := benchTools[k%uint64(len(benchTools))]
			sp.Name = "execute_tool " + tool
			sp.Attributes = kvs("warden.agent", agent, "warden.tool", tool, "gen_ai.operation.name", "execute_tool", "warden.side_effect", "external_write",
				"warden.cost", 0.0001, "warden.approval_required", false)
			if k%50 == 0 {
				sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "ToolFailed"}
			}
		default:
			model := benchModels[k%uint64(len(benchModels))]
			sp.Name, sp.Kind = "chat "+model, tracepb.Span_SPAN_KIND_CLIENT
			sp.Attributes = kvs("warden.agent", agent, "gen_ai.request.model", model, "gen_ai.operation.name", "chat",
				"gen_ai.usage.input_tokens", 900, "gen_ai.usage.output_tokens", 120, "warden.cost", 0.0021)
		}
		spans = append(spans, sp)
	}
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: kvs("service.name", "agents", "service.version", "1.4.2", "deployment.environment", "prod")},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agent-sdk", Version: "0.9.0"}, Spans: spans}},
	}}}
}

// RunOTLP measures the trace service: OTLP/gRPC ingest with Senders
// concurrent senders of Batch-span exports for Duration, then
// GET /v1/traces/{id} of a TraceSpans-span trace and the metrics queries
// of `toolcalls top` over everything ingested.
func RunOTLP(ctx context.Context, o OTLPOptions, w io.Writer) (OTLPResult, error) {
	o = o.WithDefaults()
	var res OTLPResult
	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "warden-bench-otlp-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		storeURL = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	if err != nil {
		return res, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	tenant := "bench-otlp"
	if err := st.TenantCreate(ctx, store.TenantRecord{ID: tenant, CreatedAt: time.Now()}); err != nil {
		return res, fmt.Errorf("the store must be fresh: %w", err)
	}
	secret, hash, err := auth.NewAPIKeySecret()
	if err != nil {
		return res, err
	}
	if err := st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "bench", Name: "bench", SecretHash: hash, Namespace: "*", Role: auth.RoleAdmin, CreatedAt: time.Now()})
	}); err != nil {
		return res, err
	}
	writers := 1
	if _, ok := st.(*postgres.Store); ok {
		writers = 4
	}
	authn := auth.NewAuthenticator(st, time.Now)
	svc, err := trace.New(trace.Config{Store: st, Ingest: authn, Query: authn, Authz: authz.New(st, nil), Writers: writers})
	if err != nil {
		return res, err
	}
	var ls trace.Listeners
	if ls.Query, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return res, err
	}
	if ls.OTLPGRPC, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return res, err
	}
	queryURL, grpcAddr := "http://"+ls.Query.Addr().String(), ls.OTLPGRPC.Addr().String()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- svc.Serve(sctx, ls) }()
	defer func() {
		stop()
		<-served
		svc.Close()
	}()

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return res, err
	}
	defer conn.Close()
	client := collectortrace.NewTraceServiceClient(conn)
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)

	fmt.Fprintf(w, "store: %s\ningest: OTLP/gRPC, %d senders, %d spans an export, %s\n", redactStore(storeURL), o.Senders, o.Batch, o.Duration)
	if o.CPUProfile != "" {
		stopProfile, err := startProfile(o.CPUProfile)
		if err != nil {
			return res, err
		}
		defer stopProfile()
	}
	// The exports are prepared before the clock starts (otlpload.go).
	templates := make([]*exportTemplate, exportTemplates)
	for i := range templates {
		if templates[i], err = newExportTemplate(o.Batch, uint64(i)); err != nil {
			return res, err
		}
	}
	var spans, refused atomic.Int64
	var seq atomic.Uint64
	var firstErr error
	var errOnce sync.Once
	deadline := time.Now().Add(o.Duration)
	start, cpu0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	for range o.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			var resp collectortrace.ExportTraceServiceResponse
			for now := time.Now(); now.Before(deadline); now = time.Now() {
				n := seq.Add(1)
				buf = templates[n%exportTemplates].fill(buf, n, now)
				resp.Reset()
				err := conn.Invoke(actx, collectortrace.TraceService_Export_FullMethodName, buf, &resp, grpc.ForceCodecV2(sendCodec{}))
				if err == nil && resp.GetPartialSuccess().GetRejectedSpans() > 0 {
					err = fmt.Errorf("spans rejected: %s", resp.GetPartialSuccess().GetErrorMessage())
				}
				if err != nil {
					if isExhausted(err) {
						refused.Add(1)
						time.Sleep(10 * time.Millisecond)
						continue
					}
					errOnce.Do(func() { firstErr = err })
					return
				}
				spans.Add(int64(o.Batch))
			}
		}()
	}
	wg.Wait()
	res.Elapsed, res.Spans, res.Refused = time.Since(start), spans.Load(), refused.Load()
	res.CPU = processCPU() - cpu0
	res.Calls = res.Spans * 7 / 8
	if firstErr != nil {
		return res, fmt.Errorf("export: %w", firstErr)
	}
	fmt.Fprintf(w, "  %d spans (%d tool and model calls) in %s: %.0f spans/s, %d exports refused and retried\n",
		res.Spans, res.Calls, res.Elapsed.Round(time.Millisecond), res.SpansPerSecond(), res.Refused)
	fmt.Fprintf(w, "  process CPU %s (senders and service): %.0f spans per CPU-second; this process had %.2f of the machine's %d cores\n",
		res.CPU.Round(time.Millisecond), float64(res.Spans)/res.CPU.Seconds(), res.CPU.Seconds()/res.Elapsed.Seconds(), runtimeCPUs())

	// One trace of TraceSpans spans, in exports of Batch.
	big := benchRequest(o.TraceSpans, 1<<40)
	all := big.ResourceSpans[0].ScopeSpans[0].Spans
	tid := all[0].TraceId
	for _, sp := range all {
		sp.TraceId = tid
	}
	for i := 0; i < len(all); i += o.Batch {
		part := benchRequest(0, 0)
		part.ResourceSpans[0].ScopeSpans[0].Spans = all[i:min(i+o.Batch, len(all))]
		if _, err := client.Export(actx, part); err != nil {
			return res, fmt.Errorf("export the large trace: %w", err)
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) func() error {
		return func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+path, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+secret)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", path, resp.Status)
			}
			return nil
		}
	}
	if res.TraceGet, err = timed(o.Reads, get("/v1/traces/"+hex.EncodeToString(tid))); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "GET /v1/traces/{id}, %d spans: p50 %s, p99 %s (%d reads)\n", o.TraceSpans, ms(res.TraceGet.P50), ms(res.TraceGet.P99), o.Reads)

	// The four queries of `warden toolcalls top`, over everything
	// ingested.
	window := fmt.Sprintf("%dm", int(time.Since(start).Minutes())+2)
	queries := []string{"sum(calls[W]) by (tool)", "error_rate(calls[W]) by (tool)", "p95(latency[W]) by (tool)", "sum(cost[W]) by (tool)"}
	if res.Top, err = timed(max(o.Reads/4, 20), func() error {
		for _, q := range queries {
			if err := get("/v1/metrics?query=" + url.QueryEscape(strings.ReplaceAll(q, "W", window)))(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "toolcalls top (4 metrics queries by tool) over %d calls: p50 %s, p99 %s\n", res.Calls, ms(res.Top.P50), ms(res.Top.P99))
	return res, nil
}

// timed runs fn n times one after another and returns its latencies.
func timed(n int, fn func() error) (Result, error) {
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for range n {
		t := time.Now()
		if err := fn(); err != nil {
			return Result{}, err
		}
		lat = append(lat, time.Since(t))
	}
	return summarize(lat, 0, time.Since(start)), nil
}

func isExhausted(err error) bool { return grpcstatus.Code(err) == codes.ResourceExhausted }

// redactStore hides a password in a store URL.
func redactStore(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
