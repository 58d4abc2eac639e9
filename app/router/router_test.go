package router_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/server"
)

// TestRespondThroughPrimary: an agent's call follows its route to the
// primary, an OpenAI-compatible server that receives the caller's
// request with the Model's id and the resolved key.
func TestRespondThroughPrimary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(map[string]any{"temperature": 0.2, "execution": "ex-1"}), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "chat.completion", r.body["object"])
	require.Equal(t, "primary", r.header.Get("Warden-Model"))
	require.NotEmpty(t, r.header.Get("Warden-Route-Decision"))
	msg := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "Hello from OpenAI.", msg["content"])

	req, hdr := e.oa.last()
	require.Equal(t, "gpt-4o", req["model"], "the provider receives the Model's id")
	require.Equal(t, 0.2, req["temperature"], "fields pass through")
	require.NotContains(t, req, "execution", "Warden's own field is not forwarded")
	require.Equal(t, "Bearer sk-test-openai", hdr.Get("Authorization"), "the key is resolved by the broker at the router")

	started := e.waitEvent(events.ModelCallStarted)
	require.Equal(t, "primary", started.Data["model"])
	done := e.waitEvent(events.ModelCallCompleted)
	require.Equal(t, "succeeded", done.Data["outcome"])
	require.EqualValues(t, 17, done.Data["totalTokens"])
	// 12 input tokens at 2.5 USD/M and 5 output tokens at 10 USD/M.
	require.InDelta(t, 12*2.5/1e6+5*10.0/1e6, done.Data["cost"], 1e-12)

	x := e.explain(e.bot(), "bot", "ex-1")
	require.Equal(t, http.StatusOK, x.status, string(x.raw))
	cs := candidates(t, x, 0)
	require.Len(t, cs, 2)
	require.Equal(t, "selected", cs[0]["outcome"])
	require.Equal(t, "notTried", cs[1]["outcome"])
}

// TestFallbackWhenPrimaryIsDown kills the primary: the router switches to
// the Anthropic fallback, emits ProviderSwitched, and the explanation
// says why, exactly.
func TestFallbackWhenPrimaryIsDown(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{storeURL: url(t)})
			e.oa.Close()
			r := do(t, http.MethodPost, e.url+"/v1/chat/completions", e.bot(), chat(nil), map[string]string{"Warden-Execution": "ex-down"})
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "claude", r.header.Get("Warden-Model"))
			msg := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			require.Equal(t, "Hello from Claude.", msg["content"])
			usage := r.body["usage"].(map[string]any)
			require.EqualValues(t, 29, usage["total_tokens"])

			req, hdr := e.an.last()
			require.Equal(t, "claude-sonnet-4-5", req["model"])
			require.Equal(t, "sk-ant-test", hdr.Get("x-api-key"))
			require.Equal(t, "2023-06-01", hdr.Get("anthropic-version"))
			require.EqualValues(t, 4096, req["max_tokens"], "Anthropic needs max_tokens; the router supplies a default")

			sw := e.waitEvent(events.ProviderSwitched)
			require.Equal(t, "primary", sw.Data["from"])
			require.Equal(t, "claude", sw.Data["to"])
			require.Equal(t, "connection refused", sw.Data["reason"])

			x := e.explain(e.bot(), "bot", "ex-down")
			require.Equal(t, http.StatusOK, x.status, string(x.raw))
			cs := candidates(t, x, 0)
			require.Equal(t, "failed", cs[0]["outcome"])
			require.Equal(t, "error", cs[0]["reason"])
			require.Contains(t, cs[0]["detail"], "connection refused")
			require.Equal(t, "selected", cs[1]["outcome"])
			d := x.body["decisions"].([]any)[0].(map[string]any)
			require.Equal(t, "claude", d["selected"])
			require.Equal(t, "succeeded", d["outcome"])
		})
	}
}

// TestSwitchingRules: rate limiting, server errors, overload and timeouts
// switch; a request the provider refuses as the caller's fault does not.
func TestSwitchingRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mode       string
		wantStatus int
		wantModel  string
		wantCode   string
	}{
		{"rate limited", "429", 200, "claude", ""},
		{"server error", "500", 200, "claude", ""},
		{"timeout", "slow", 200, "claude", ""},
		{"the Model's key refused", "401", 200, "claude", ""},
		{"caller's fault", "400", 400, "", "InvalidRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{attempt: 300 * time.Millisecond})
			e.oa.set(tc.mode)
			r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(nil), nil)
			require.Equal(t, tc.wantStatus, r.status, string(r.raw))
			require.Equal(t, tc.wantModel, r.header.Get("Warden-Model"))
			require.Equal(t, tc.wantCode, r.code())
			if tc.mode == "400" {
				require.Contains(t, r.body["error"].(map[string]any)["message"], "Invalid value for 'temperature'")
				require.Zero(t, e.an.calls.Load(), "a caller's 4xx never switches")
			}
		})
	}
}

// TestEveryProviderRateLimited answers 429 with the provider's
// retry-after when no fallback is left.
func TestEveryProviderRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.oa.set("429")
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.admin, chat(map[string]any{"model": "primary"}), nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, string(r.raw))
	require.Equal(t, "RateLimited", r.code())
	require.Equal(t, "7", r.header.Get("Retry-After"))
	e.an.mode.Store("529")
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(nil), nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.raw))
	require.Equal(t, "Unavailable", r.code())

	// A refused key is not quoted back to the caller.
	e.oa.set("401")
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", e.admin, chat(map[string]any{"model": "primary"}), nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.raw))
	require.Contains(t, string(r.raw), "refused the Model's credentials (HTTP 401)")
	require.NotContains(t, string(r.raw), "sk-test")
}

// readSSE reads a stream's data lines until [DONE] or the end.
func readSSE(t testing.TB, res *http.Response) (data []string, events []string) {
	t.Helper()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, v)
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, v)
		}
	}
	return data, events
}

func post(t testing.TB, url, token, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// TestStream streams from both providers in the OpenAI format: chunks
// forwarded as they come, the usage chunk only when asked for, [DONE].
func TestStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	res := post(t, e.url+"/v1/model/stream", e.bot(), `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	data, _ := readSSE(t, res)
	require.Equal(t, "[DONE]", data[len(data)-1])
	require.Contains(t, strings.Join(data, "\n"), `" from OpenAI."`)
	require.NotContains(t, strings.Join(data, "\n"), `"usage"`, "no usage chunk unless the caller asked")
	sreq, _ := e.oa.last()
	require.Equal(t, map[string]any{"include_usage": true}, sreq["stream_options"], "the router always asks for usage")
	done := e.waitEvent(events.ModelCallCompleted)
	require.EqualValues(t, 17, done.Data["totalTokens"], "streamed usage is counted")

	e.oa.Close()
	res = post(t, e.url+"/v1/chat/completions", e.bot(), `{"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "claude", res.Header.Get("Warden-Model"), "a provider that fails before the first chunk falls back")
	data, _ = readSSE(t, res)
	joined := strings.Join(data, "\n")
	require.Contains(t, joined, `"chat.completion.chunk"`)
	require.Contains(t, joined, `"content":" from Claude."`)
	require.Contains(t, joined, `"finish_reason":"stop"`)
	require.Contains(t, joined, `"total_tokens":29`)
	require.Equal(t, "[DONE]", data[len(data)-1])
}

// TestStreamFailsMidway ends the stream with an error event when the
// provider drops the connection after the first chunk.
func TestStreamFailsMidway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.oa.set("midstream")
	res := post(t, e.url+"/v1/model/stream", e.bot(), `{"messages":[{"role":"user","content":"Hi"}],"execution":"ex-mid"}`, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	data, _ := readSSE(t, res)
	require.Contains(t, data[len(data)-1], `"error"`)
	require.Contains(t, data[len(data)-2], `"Hello"`)
	require.Zero(t, e.an.calls.Load(), "no fallback after the first chunk")
	x := e.explain(e.bot(), "bot", "ex-mid")
	cs := candidates(t, x, 0)
	require.Equal(t, "failed", cs[0]["outcome"])
	require.Contains(t, cs[0]["detail"], "mid-stream")
}

// TestCapabilityMatching skips Models that lack what the request needs.
func TestCapabilityMatching(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	lean := e.token(server.LocalTenant, "default", "lean", "dev")
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", lean, chat(map[string]any{"tools": tools, "execution": "ex-cap"}), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "claude", r.header.Get("Warden-Model"))
	msg := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	require.Equal(t, "toolu_01", call["id"])
	require.JSONEq(t, `{"city":"Paris"}`, call["function"].(map[string]any)["arguments"].(string))
	require.Equal(t, "tool_calls", r.body["choices"].([]any)[0].(map[string]any)["finish_reason"])
	areq, _ := e.an.last()
	require.Equal(t, "get_weather", areq["tools"].([]any)[0].(map[string]any)["name"], "tools are translated to Anthropic's shape")

	long := strings.Repeat("word ", 100)
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", lean, map[string]any{"execution": "ex-cap",
		"messages": []any{map[string]any{"role": "user", "content": long}}}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "claude", r.header.Get("Warden-Model"))

	x := e.explain(lean, "lean", "ex-cap")
	cs := candidates(t, x, 0)
	require.Equal(t, "skipped", cs[0]["outcome"])
	require.Equal(t, "capability", cs[0]["reason"])
	require.Equal(t, "toolUse", cs[0]["capability"])
	cs = candidates(t, x, 1)
	require.Equal(t, "contextWindow", cs[0]["capability"])
}

// TestPolicyAtCallTime: the model denied in prod is skipped for a prod
// workload, and a call that names it is refused with PolicyDenied.
func TestPolicyAtCallTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	prod := e.token(server.LocalTenant, "default", "bot", "prod")
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", prod, chat(map[string]any{"execution": "ex-prod"}), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "claude", r.header.Get("Warden-Model"))
	require.Zero(t, e.oa.calls.Load())

	r = do(t, http.MethodPost, e.url+"/v1/model/respond", prod, chat(map[string]any{"model": "primary", "execution": "ex-prod"}), nil)
	require.Equal(t, http.StatusOK, r.status, "naming the primary starts from it and still falls back: %s", r.raw)
	require.Equal(t, "claude", r.header.Get("Warden-Model"))

	e.an.mode.Store("529")
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", prod, chat(map[string]any{"model": "primary"}), nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.raw))

	// An admin naming the primary alone in prod is refused by policy.
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", prod, chat(nil), nil)
	require.NotEqual(t, http.StatusOK, r.status)
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: claude-off}
spec:
  rules:
    - name: no-claude
      hooks: [modelCall]
      when: 'model == "anthropic:claude-sonnet-4-5" && environment == "prod"'
      action: deny
      message: claude is off in prod
`)
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", prod, chat(nil), nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
	require.Equal(t, "PolicyDenied", r.code())
	details := r.body["error"].(map[string]any)["details"].(map[string]any)
	require.Equal(t, "no-primary-in-prod", details["policyId"])
	require.Equal(t, "2", details["policyVersion"])
	require.Equal(t, "deny-primary", details["rule"])
	require.Contains(t, r.body["error"].(map[string]any)["message"], "no-primary-in-prod@2")

	x := e.explain(prod, "bot", "ex-prod")
	cs := candidates(t, x, 0)
	require.Equal(t, "policy", cs[0]["reason"])
	require.Equal(t, map[string]any{"policyId": "no-primary-in-prod", "policyVersion": "2", "rule": "deny-primary"}, cs[0]["policy"])
}

// TestRouteAccess: an agent calls only the Models its manifest routes
// to; other namespaces and tenants see nothing of another's.
func TestRouteAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(map[string]any{"model": "small"}), nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
	require.Equal(t, "Forbidden", r.code())
	require.Contains(t, r.body["error"].(map[string]any)["message"], "not on the route of agent \"bot\"")
	require.Zero(t, e.oa.calls.Load())

	r = do(t, http.MethodPost, e.url+"/v1/model/respond", "", chat(nil), nil)
	require.Equal(t, http.StatusUnauthorized, r.status)

	// A tool-gateway token is not a model-router token.
	gw, _, err := e.srv.Issuer().Issue(t.Context(), workloadParams("default", "bot", "dev", "warden:tool-gateway"))
	require.NoError(t, err)
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", gw, chat(nil), nil)
	require.Equal(t, http.StatusUnauthorized, r.status)

	// The admin key names any Model of its namespace.
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", e.admin, chat(map[string]any{"model": "small", "execution": "ex-admin"}), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	r = do(t, http.MethodPost, e.url+"/v1/model/respond", e.admin, chat(nil), nil)
	require.Equal(t, http.StatusBadRequest, r.status, "a caller without an agent names a model")

	// Tenant B: its owner and its agent reach none of tenant default's
	// Models, routes or decisions.
	bKey := newTenant(t, e.st, "tenant-b")
	bAgent := e.token("tenant-b", "default", "bot", "dev")
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"owner names a Model", http.MethodPost, "/v1/model/respond", bKey, chat(map[string]any{"model": "primary"}), http.StatusNotFound},
		{"agent of the same name", http.MethodPost, "/v1/model/respond", bAgent, chat(nil), http.StatusForbidden},
		{"explain", http.MethodGet, "/v1/route/small/explain?execution=ex-admin", bKey, nil, http.StatusNotFound},
		{"capabilities", http.MethodGet, "/v1/models/capabilities", bKey, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, e.url+tc.path, tc.token, tc.body, nil)
			require.Equal(t, tc.status, r.status, string(r.raw))
			require.NotContains(t, string(r.raw), "gpt-4o")
			require.NotContains(t, string(r.raw), "claude-sonnet")
		})
	}
}

// TestCallerGoneMidStream: a caller that hangs up after the first chunks
// of a stream cancels the provider's stream, and the decision says how far
// the answer had got.
func TestCallerGoneMidStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.oa.set("stall")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/model/stream", strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"execution":"ex-midgone"}`))
	req.Header.Set("Authorization", "Bearer "+e.bot())
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "Hello") {
	}
	require.Contains(t, sc.Text(), "Hello", "the chunks before the stall arrive as they are sent")
	cancel()
	_ = res.Body.Close()
	require.Eventually(t, func() bool { return e.oa.cancelled.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the provider's stream is cancelled when the caller goes away")
	require.Eventually(t, func() bool {
		x := e.explain(e.bot(), "bot", "ex-midgone")
		ds, _ := x.body["decisions"].([]any)
		if len(ds) != 1 {
			return false
		}
		d := ds[0].(map[string]any)
		cs, _ := d["candidates"].([]any)
		return d["outcome"] == "cancelled" && len(cs) > 0 && strings.Contains(fmt.Sprint(cs[0].(map[string]any)["detail"]), "went away after 2 chunks")
	}, 10*time.Second, 5*time.Millisecond)
}

// TestCallerGoneCancelsProvider: a caller that hangs up cancels the
// provider's request, and the decision says so.
func TestCallerGoneCancelsProvider(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.oa.set("slow")
	for _, path := range []string{"/v1/model/respond", "/v1/model/stream"} {
		ctx, cancel := context.WithCancel(t.Context())
		before := e.oa.calls.Load()
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"execution":"ex-gone"}`))
			req.Header.Set("Authorization", "Bearer "+e.bot())
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				_ = res.Body.Close()
			}
			errc <- err
		}()
		require.Eventually(t, func() bool { return e.oa.calls.Load() > before }, 10*time.Second, time.Millisecond)
		cancelled := e.oa.cancelled.Load()
		cancel()
		require.Error(t, <-errc)
		require.Eventually(t, func() bool { return e.oa.cancelled.Load() > cancelled }, 10*time.Second, time.Millisecond, path)
	}
	require.Zero(t, e.an.calls.Load(), "a caller that went away is not a reason to switch")
	require.Eventually(t, func() bool {
		x := e.explain(e.bot(), "bot", "ex-gone")
		ds, _ := x.body["decisions"].([]any)
		return len(ds) == 2 && ds[0].(map[string]any)["outcome"] == "cancelled" && ds[1].(map[string]any)["outcome"] == "cancelled"
	}, 10*time.Second, 5*time.Millisecond)
}
