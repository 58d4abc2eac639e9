package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

const budgets = `apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: budgets}
spec:
  rules: [{name: log-only, when: "false", action: allow}]
  limits:
    - {scope: tool, match: crm.search, window: 1h, maxCalls: 2}
    - {scope: agent, match: bot, window: 1h, maxCost: 0.5}
    - {scope: namespace, match: "*", window: 1h, maxCalls: 1, mode: soft}
`

func TestRateLimitsAndBudgets(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			e.apply(budgets)
			first := e.call("crm.search", map[string]any{"query": "a"}, nil)
			require.Equal(t, http.StatusOK, first.status, string(first.raw))
			require.Empty(t, first.header.Values("Warning"))
			second := e.call("crm.search", map[string]any{"query": "b"}, nil)
			require.Equal(t, http.StatusOK, second.status, string(second.raw))
			require.Len(t, second.header.Values("Warning"), 1, "the soft namespace cap warns")
			require.Contains(t, second.header.Get("Warning"), "budgets@")
			third := e.call("crm.search", map[string]any{"query": "c"}, nil)
			require.Equal(t, http.StatusTooManyRequests, third.status, string(third.raw))
			require.Equal(t, "RateLimited", third.code())
			require.NotEmpty(t, third.header.Get("Retry-After"))
			require.Equal(t, 2, e.tools.count("/search"))

			// Cost: tickets.create costs 0.25, the agent's budget is 0.5.
			for _, title := range []string{"one", "two"} {
				r := e.call("tickets.create", map[string]any{"title": title}, nil)
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
			}
			over := e.call("tickets.create", map[string]any{"title": "three"}, nil)
			require.Equal(t, http.StatusTooManyRequests, over.status, string(over.raw))
			require.Equal(t, "BudgetExceeded", over.code())
			require.Equal(t, 2, e.tools.count("/create"))

			var sawWarning, sawError bool
			err := e.st.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
				evs, err := r.EventList(ctx, 0, 1000)
				for _, ev := range evs {
					if ev.Type == "BudgetExceeded" {
						sawWarning = sawWarning || ev.Data["severity"] == "warning"
						sawError = sawError || ev.Data["severity"] == "error"
					}
				}
				return err
			})
			require.NoError(t, err)
			require.True(t, sawWarning && sawError, "BudgetExceeded events of both severities are persisted")
		})
	}
}

func TestLogsNeverHoldArgumentsOrResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	const canary = "canary-7f3a9c"
	for _, tool := range []string{"crm.search", "tickets.create", "ops.fail", "tickets.create"} {
		e.call(tool, map[string]any{"query": canary, "title": canary}, nil)
	}
	e.call("crm.search", map[string]any{"query": 5, "canary": canary}, nil)
	require.Greater(t, e.tools.count("/create"), 0)
	require.NotEmpty(t, e.logs.String(), "the gateway did log")
	require.NotContains(t, e.logs.String(), canary)
}

func TestEachCallIsOneTraceWithTheSteps(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ts := newToolServer(t)
	e := start(t, envOptions{storeURL: "sqlite://" + t.TempDir() + "/w.db", tools: ts, cfg: func(c *server.Config) { c.Tracer = tp }})
	e.apply(fixture(ts.URL))
	r := e.call("crm.search", map[string]any{"query": "x"}, nil)
	require.Equal(t, http.StatusOK, r.status)

	var root sdktrace.ReadOnlySpan
	names := map[string]bool{}
	for _, s := range rec.Ended() {
		names[s.Name()] = true
		if s.Name() == "warden.toolcall" {
			root = s
		}
	}
	require.NotNil(t, root)
	for _, step := range []string{"1.resolve", "2.authenticate", "3.classify", "4.policy", "5.record", "6.trace", "7.invoke", "8.result", "9.output"} {
		require.True(t, names[step], "span %s", step)
	}
	for _, s := range rec.Ended() {
		require.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace per call")
	}
	var evs []string
	for _, ev := range root.Events() {
		evs = append(evs, ev.Name)
	}
	require.Equal(t, []string{"toolCallRequest", "toolCallResult"}, evs)

	// The record names its trace, and so does the record of a call policy
	// denied, which never reaches step 6.
	annotations := func(r resp) map[string]any {
		a, _ := r.body["metadata"].(map[string]any)["annotations"].(map[string]any)
		return a
	}
	require.Equal(t, root.SpanContext().TraceID().String(), annotations(r)[gateway.AnnotationTraceID], string(r.raw))
	denied := e.call("tickets.create", map[string]any{"title": "forbidden"}, nil)
	require.Equal(t, http.StatusForbidden, denied.status, string(denied.raw))
	got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+denied.header.Get(gateway.HeaderToolCall), e.bot(), nil, nil)
	require.Equal(t, "Denied", got.phase(), string(got.raw))
	id, _ := annotations(got)[gateway.AnnotationTraceID].(string)
	require.Regexp(t, `^[0-9a-f]{32}$`, id)
	require.NotEqual(t, root.SpanContext().TraceID().String(), id, "each call is a trace of its own")
}

func TestAOSHooksGovernFunctionTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	hook := func(body string) map[string]any {
		r := do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), body, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		return r.body
	}
	ctx := `"context": {"agent": {"id": "bot", "name": "bot", "url": "http://agent.local", "instructions": "help", "version": "1", "provider": {"name": "acme", "url": "https://acme.example"}}, "session": {"id": "s-1"}, "turnId": "t1", "stepId": "st1", "timestamp": "2026-11-23T10:00:00Z"}`
	req := `{"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest", "params": {` + ctx + `, "toolCallRequest": {"executionId": "ex-1", "toolId": "local.lookup", "inputs": [{"name": "customer", "value": "c-9"}]}}}`
	res := hook(req)
	require.Contains(t, res, "result", res)
	result := res["result"].(map[string]any)
	require.Equal(t, "allow", result["decision"], res)
	call := result["data"].(map[string]any)["toolCall"].(string)

	out := `{"jsonrpc": "2.0", "id": 2, "method": "steps/toolCallResult", "params": {` + ctx + `, "toolCallResult": {"executionId": "ex-1", "result": {"outputs": [{"kind": "text", "text": "{\"email\": \"jane.doe@example.com\"}"}], "isError": false}}}}`
	res = hook(out)
	result = res["result"].(map[string]any)
	require.Equal(t, "modify", result["decision"], res)
	mod, _ := json.Marshal(result["modifiedRequest"])
	require.Contains(t, string(mod), "[REDACTED:EMAIL]")
	require.NotContains(t, string(mod), "jane.doe")

	got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call, e.bot(), nil, nil)
	require.Equal(t, "Succeeded", got.phase())
	require.Equal(t, "ex-1", got.body["metadata"].(map[string]any)["annotations"].(map[string]any)["warden.dev/aos-execution-id"])

	// The same call again is not run again.
	res = hook(strings.Replace(req, `"ex-1"`, `"ex-2"`, 1))
	require.Contains(t, res, "result", res)
	result = res["result"].(map[string]any)
	require.Equal(t, "deny", result["decision"])
	require.Contains(t, result["reasonCode"], "IdempotentReplayed")

	// Malformed JSON-RPC gets the JSON-RPC error codes.
	for _, tt := range []struct {
		body string
		code float64
	}{
		{`{"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest",}`, -32700},
		{`{"jsonrpc": "1.0", "id": 1, "method": "ping"}`, -32600},
		{`{"jsonrpc": "2.0", "id": 1, "method": "steps/nope", "params": {}}`, -32601},
		{`{"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest", "params": {` + ctx + `}}`, -32602},
	} {
		r := do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), tt.body, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		require.Equal(t, tt.code, r.body["error"].(map[string]any)["code"], string(r.raw))
	}
	// Other steps are accepted and evaluated.
	msg := `{"jsonrpc": "2.0", "id": 9, "method": "steps/message", "params": {` + ctx + `, "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}}`
	r := do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), msg, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.True(t, bytes.Contains(r.raw, []byte(`"result"`)) || bytes.Contains(r.raw, []byte(`"error"`)), string(r.raw))
}

const hardOnly = `apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: hard}
spec:
  rules: [{name: log-only, when: "false", action: allow}]
  limits:
    - {scope: tool, match: crm.search, window: 1h, maxCalls: 2}
`

// TestHardLimitOnTheBatchedPath: with hard limits only, calls are recorded
// through the store's batched writes; the refused one leaves no claim or
// charge behind there and is recorded as Denied by the general path, and a
// retry of it is refused again rather than replayed.
func TestHardLimitOnTheBatchedPath(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			e.apply(hardOnly)
			for _, q := range []string{"a", "b"} {
				r := e.call("crm.search", map[string]any{"query": q}, nil)
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
			}
			for range 2 {
				r := e.call("crm.search", map[string]any{"query": "c"}, nil)
				require.Equal(t, http.StatusTooManyRequests, r.status, string(r.raw))
				require.Equal(t, "RateLimited", r.code())
				require.Empty(t, r.header.Get("Idempotent-Replayed"), "a refused call holds no claim")
				name := r.header.Get("Warden-Tool-Call")
				require.NotEmpty(t, name, "%s %v", r.raw, r.header)
				got := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+name, nil)
				require.Equal(t, http.StatusOK, got.status, string(got.raw))
				var tc struct {
					Status struct{ Phase string } `json:"status"`
				}
				require.NoError(t, json.Unmarshal(got.raw, &tc))
				require.Equal(t, "Denied", tc.Status.Phase)
			}
			require.Equal(t, 2, e.tools.count("/search"))
			var calls int64
			err := e.st.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
				rows, err := r.ResourceList(ctx, store.ListParams{Kind: "ToolCall", Namespace: "default"})
				calls = int64(len(rows.Items))
				return err
			})
			require.NoError(t, err)
			require.Equal(t, int64(4), calls, "two calls that ran and two refusals, each recorded once")
		})
	}
}
