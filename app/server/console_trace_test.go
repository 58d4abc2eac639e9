package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/trace"
	"github.com/warden-dev/warden/app/workload"
)

const tracedFleet = `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: crm.search}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "TOOLS/search"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: custom}
  modelRoute: {primary: m1}
  tools: [{name: crm.search}]
`

// TestToolCallAndTraceLinkEachOther makes a governed call with the
// gateway's spans going into the trace store, as `warden up` wires them:
// the call's record names its trace, the call's console page links to the
// trace's waterfall, which shows the call's steps and links back.
func TestToolCallAndTraceLinkEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"hits": 1}`)
	}))
	t.Cleanup(tools.Close)
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(trace.TenantProcessor{}))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ln, gln := listen(t), listen(t)
	cfg := server.Config{Store: st, ControlAddr: ln.Addr().String(), Tracer: tp}
	withOIDC(false)(&cfg)
	srv, err := server.New(cfg)
	require.NoError(t, err)
	svc, err := trace.New(trace.Config{Store: st, Ingest: srv.Authenticator(workload.AudienceTrace),
		Query: srv.Authenticator(workload.AudienceControlPlane), Authz: srv.Authorizer()})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	tp.RegisterSpanProcessor(sdktrace.NewSimpleSpanProcessor(svc.Exporter()))
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	t.Cleanup(func() { cancel(); <-done })
	b := &bundle{url: "http://" + ln.Addr().String(), key: key, store: st, srv: srv}
	// Members are read when authorization first loads: before any call.
	cookie, _ := signIn(t, b, "olga@example.com", true)
	r := b.apply(t, strings.ReplaceAll(tracedFleet, "TOOLS", tools.URL))
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	tok, _, err := srv.Issuer().Issue(ctx, workload.IssueParams{Tenant: server.LocalTenant, Namespace: "default", Agent: "bot",
		Environment: "dev", Audience: workload.AudienceToolGateway})
	require.NoError(t, err)
	call := callTool(t, "http://"+gln.Addr().String(), tok, `{"tool": "crm.search", "input": {"q": "x"}}`)
	md := call["metadata"].(map[string]any)
	name := md["name"].(string)
	traceID, _ := md["annotations"].(map[string]any)[gateway.AnnotationTraceID].(string)
	require.Regexp(t, `^[0-9a-f]{32}$`, traceID, "the record names its trace: %v", md)

	page := b.page(t, http.MethodGet, "/toolcalls/default/"+name, cookie, nil, nil)
	require.Equal(t, http.StatusOK, page.status, string(page.body))
	href := "/traces/" + traceID + "?namespace=default"
	require.Contains(t, string(page.body), `href="`+href+`"`)

	// The spans are written after the call answers: wait for the root.
	var waterfall string
	require.Eventually(t, func() bool {
		r := b.page(t, http.MethodGet, href, cookie, nil, nil)
		waterfall = string(r.body)
		return r.status == http.StatusOK && strings.Contains(waterfall, "warden.toolcall ")
	}, 10*time.Second, 10*time.Millisecond, "the trace page never showed the call's root span")
	for _, step := range []string{"1.resolve", "5.record", "7.invoke", "9.output", "toolCallRequest", "toolCallResult"} {
		require.Contains(t, waterfall, step)
	}
	require.Regexp(t, regexp.MustCompile(`href="/toolcalls/default/`+regexp.QuoteMeta(name)+`"`), waterfall, "the trace links back to its call")

	// Another namespace holds no such trace.
	r = b.page(t, http.MethodGet, "/traces/"+traceID+"?namespace=prod", cookie, nil, nil)
	require.Equal(t, http.StatusNotFound, r.status)
}

// callTool makes a tool call and returns the record it answers.
func callTool(t *testing.T, gw, token, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gw+"/v1/tool-calls", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
