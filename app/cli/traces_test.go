package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/trace"
)

// traceStack is a trace service with some tool calls in it.
type traceStack struct {
	queryURL, key, traceID string
}

func startTraceStack(t *testing.T) traceStack {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: "acme", CreatedAt: time.Now()}))
	secret, hash, err := auth.NewAPIKeySecret()
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, "acme", func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "k", Name: "k", SecretHash: hash, Namespace: "default", Role: "editor", CreatedAt: time.Now()})
	}))
	authn := auth.NewAuthenticator(st, time.Now)
	svc, err := trace.New(trace.Config{Store: st, Ingest: authn, Query: authn, Authz: authz.New(st, nil)})
	require.NoError(t, err)
	qln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Serve(sctx, trace.Listeners{Query: qln, OTLPHTTP: hln}) }()
	t.Cleanup(func() { cancel(); <-done; svc.Close() })

	// One trace: an agent run calling crm.get (ok, 2 ms) and stripe.refund
	// (failed, 40 ms, cost 0.5) twice.
	tid := make([]byte, 16)
	_, _ = rand.Read(tid)
	now := uint64(time.Now().UnixNano())
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	id := func(n byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, n} }
	spans := []*tracepb.Span{{TraceId: tid, SpanId: id(1), Name: "agent.run", StartTimeUnixNano: now - 1e8, EndTimeUnixNano: now, Attributes: []*commonpb.KeyValue{kv("warden.agent", "bot")}}}
	for i, c := range []struct {
		tool string
		ms   uint64
		fail bool
	}{{"crm.get", 2, false}, {"stripe.refund", 40, true}, {"stripe.refund", 40, false}} {
		sp := &tracepb.Span{TraceId: tid, SpanId: id(byte(i + 2)), ParentSpanId: id(1), Name: "tool " + c.tool, StartTimeUnixNano: now - 9e7,
			EndTimeUnixNano: now - 9e7 + c.ms*1e6, Attributes: []*commonpb.KeyValue{kv("warden.agent", "bot"), kv("warden.tool", c.tool)}}
		if c.tool == "stripe.refund" {
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "warden.cost", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}})
		}
		if c.fail {
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}
		}
		spans = append(spans, sp)
	}
	body, err := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+hln.Addr().String()+"/v1/traces", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	return traceStack{queryURL: "http://" + qln.Addr().String(), key: secret, traceID: hex.EncodeToString(tid)}
}

func TestTracesCommands(t *testing.T) {
	t.Parallel()
	ts := startTraceStack(t)
	home := t.TempDir()
	run := func(args ...string) result {
		var out, errb bytes.Buffer
		vars := map[string]string{clientconfig.EnvHome: home, envTraceServer: ts.queryURL}
		code := RunWith(t.Context(), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, Now: time.Now},
			append([]string{"warden", "--server", "http://127.0.0.1:1", "--token", ts.key}, args...))
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}

	res := run("toolcalls", "top", "--by", "error_rate", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	var rep metricsReport
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep), res.stdout)
	require.Equal(t, int64(3), rep.Calls)
	require.Len(t, rep.Items, 2)
	require.Equal(t, metricStats{Tool: "stripe.refund", Calls: 2, Errors: 1, ErrorRate: 0.5, P50Ms: rep.Items[0].P50Ms, P95Ms: rep.Items[0].P95Ms, Cost: 1}, rep.Items[0])
	require.InDelta(t, 40, rep.Items[0].P95Ms, 10, "in the 20-50 ms bucket")
	require.Equal(t, "crm.get", rep.Items[1].Tool)

	res = run("toolcalls", "top", "--by", "latency", "--per-agent")
	require.Equal(t, 0, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Regexp(t, `^TOOL\s+AGENT\s+CALLS\s+ERRORS\s+ERROR-RATE\s+P50\s+P95\s+COST$`, lines[0])
	require.Regexp(t, `^stripe.refund\s+bot\s+2\s+1\s+50.0%`, lines[1])
	require.Regexp(t, `^crm.get\s+bot\s+1\s+0\s+0.0%`, lines[2])

	res = run("toolcalls", "top", "--agent", "nobody")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, "No tool calls found in namespace default in the last 60m.")

	res = run("traces", "ls", "--selector", "tool=stripe.refund,status=error")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, ts.traceID)
	require.Contains(t, res.stdout, "agent.run")

	res = run("traces", "get", ts.traceID)
	require.Equal(t, 0, res.code, res.stderr)
	lines = strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Equal(t, "Trace "+ts.traceID+": 4 spans", lines[0])
	require.Regexp(t, `^agent.run\s`, lines[2])
	require.Regexp(t, `^  tool stripe.refund\s+-\s+stripe.refund\s+\+10ms\s+40ms\s+error$`, lines[4])

	res = run("traces", "get", strings.Repeat("0", 32))
	require.Equal(t, ExitNotFound, res.code, res.stderr)
	require.Contains(t, res.stderr, "NotFound")

	res = run("traces", "ls", "--selector", "color=red")
	require.Equal(t, ExitUsage, res.code)
}
