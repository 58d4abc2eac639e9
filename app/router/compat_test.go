package router_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
)

// TestMessagesWireFormat: POST /v1/messages speaks Anthropic's format,
// non-streamed and streamed, whichever provider answers.
func TestMessagesWireFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	body := `{"model":"bot","max_tokens":256,"system":"Be brief.","messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"get_weather","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"18C"},{"type":"text","text":"Thanks"}]}],
		"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}]}`
	// x-api-key is how Anthropic's SDKs send their key.
	r := do(t, http.MethodPost, e.url+"/v1/messages", "", body, map[string]string{"x-api-key": e.bot(), "anthropic-version": "2023-06-01"})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "message", r.body["type"])
	require.Equal(t, "tool_use", r.body["stop_reason"])
	content := r.body["content"].([]any)
	tu := content[len(content)-1].(map[string]any)
	require.Equal(t, "tool_use", tu["type"])
	require.Equal(t, map[string]any{"city": "Paris"}, tu["input"])
	require.EqualValues(t, 12, r.body["usage"].(map[string]any)["input_tokens"])
	oreq, _ := e.oa.last()
	msgs := oreq["messages"].([]any)
	require.Equal(t, "system", msgs[0].(map[string]any)["role"])
	require.Equal(t, "tool", msgs[3].(map[string]any)["role"], "tool results become tool messages")
	require.Equal(t, "toolu_9", msgs[3].(map[string]any)["tool_call_id"])

	for _, provider := range []string{"openai", "anthropic"} {
		if provider == "anthropic" {
			e.oa.set("429")
		}
		res := post(t, e.url+"/v1/messages", e.bot(), `{"max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, provider)
		data, evs := readSSE(t, res)
		require.Equal(t, "message_start", evs[0], provider)
		require.Equal(t, "message_stop", evs[len(evs)-1], provider)
		require.Contains(t, evs, "content_block_delta", provider)
		joined := strings.Join(data, "\n")
		require.Contains(t, joined, `"text_delta"`, provider)
		require.Contains(t, joined, `"stop_reason":"end_turn"`, provider)
	}

	r = do(t, http.MethodPost, e.url+"/v1/messages", e.bot(), `{"messages":[{"role":"user","content":"Hi"}]}`, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "error", r.body["type"], "errors in Anthropic's shape")
	require.Equal(t, "invalid_request_error", r.body["error"].(map[string]any)["type"])
}

// TestBudgets: a hard token budget on the primary skips it once spent; a
// hard cost budget of the agent refuses with BudgetExceeded; a soft one
// warns.
func TestBudgets(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{storeURL: url(t)})
			e.apply(`apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: budgets}
spec:
  rules:
    - {name: none, hooks: [modelCall], when: "false", action: deny}
  limits:
    - {scope: model, match: primary, window: 1h, maxTokens: 10}
    - {scope: agent, match: bot, window: 1h, maxCost: 0.0002}
    - {scope: namespace, match: "*", window: 1h, maxCalls: 100, mode: soft}
`)
			call := func(exec string) resp {
				return do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(map[string]any{"execution": exec}), nil)
			}
			r := call("ex-b")
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "primary", r.header.Get("Warden-Model"))
			require.NoError(t, e.srv.Router().Flush(t.Context()))
			// 17 tokens spent of 10: the primary is skipped.
			r = call("ex-b")
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "claude", r.header.Get("Warden-Model"))
			ev := e.waitEvent(events.BudgetExceeded)
			require.Equal(t, "model", ev.Data["scope"])
			require.NoError(t, e.srv.Router().Flush(t.Context()))
			// 0.00008 + 0.000195 USD spent of 0.0002: the agent is refused.
			r = call("ex-b")
			require.Equal(t, http.StatusTooManyRequests, r.status, string(r.raw))
			require.Equal(t, "BudgetExceeded", r.code())
			require.NotEmpty(t, r.header.Get("Retry-After"))
			x := e.explain(e.bot(), "bot", "ex-b")
			cs := candidates(t, x, 1)
			require.Equal(t, "budget", cs[0]["reason"])
			require.Equal(t, "selected", cs[1]["outcome"])
		})
	}
}

// TestCapabilities lists the capability vector of the Models a caller may
// use.
func TestCapabilities(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := do(t, http.MethodGet, e.url+"/v1/models/capabilities", e.bot(), nil, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	items := r.body["items"].([]any)
	require.Len(t, items, 2, "an agent sees its route")
	first := items[0].(map[string]any)
	require.Equal(t, "primary", first["name"])
	require.Equal(t, "local:gpt-4o", first["routeId"])
	require.Equal(t, true, first["toolUse"])
	require.EqualValues(t, 128000, first["contextWindow"])
	require.EqualValues(t, 2.5, first["inputPerMillion"])
	r = do(t, http.MethodGet, e.url+"/v1/models/capabilities", e.admin, nil, nil)
	require.Len(t, r.body["items"].([]any), 4, "an admin sees every Model of the namespace")
	require.NotContains(t, string(r.raw), "sk-test", "keys never leave the router")
}

// TestAnswersMatchOpenAISchema validates the router's answers against the
// schemas of OpenAI's OpenAPI description (testdata/openai-schemas.json).
func TestAnswersMatchOpenAISchema(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/openai-schemas.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	require.NoError(t, c.AddResource("openai.json", doc))
	schema := func(name string) *jsonschema.Schema {
		s, err := c.Compile("openai.json#/components/schemas/" + name)
		require.NoError(t, err)
		return s
	}
	valid := func(s *jsonschema.Schema, b []byte, what string) {
		t.Helper()
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		require.NoError(t, err, what)
		require.NoError(t, s.Validate(v), "%s: %s", what, b)
	}
	e := newEnv(t, envOptions{})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	for _, provider := range []string{"openai", "anthropic"} {
		if provider == "anthropic" {
			e.oa.set("500")
		}
		for _, extra := range []map[string]any{nil, {"tools": tools}} {
			r := do(t, http.MethodPost, e.url+"/v1/chat/completions", e.bot(), chat(extra), nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			valid(schema("CreateChatCompletionResponse"), r.raw, provider+" answer")
			res := post(t, e.url+"/v1/chat/completions", e.bot(), string(must(json.Marshal(chat(merge(extra, map[string]any{"stream": true,
				"stream_options": map[string]any{"include_usage": true}}))))), nil)
			data, _ := readSSE(t, res)
			for _, d := range data[:len(data)-1] {
				valid(schema("CreateChatCompletionStreamResponse"), []byte(d), provider+" chunk")
			}
		}
	}
	e.oa.set("ok")
	r := do(t, http.MethodGet, e.url+"/v1/models", e.bot(), nil, nil)
	valid(schema("ListModelsResponse"), r.raw, "models")
	r = do(t, http.MethodPost, e.url+"/v1/embeddings", e.token("default", "default", "emb", "dev"), map[string]any{"model": "embedder", "input": "hi"}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	valid(schema("CreateEmbeddingResponse"), r.raw, "embeddings")
	r = do(t, http.MethodPost, e.url+"/v1/chat/completions", e.bot(), chat(map[string]any{"model": "small"}), nil)
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.raw, &body))
	errObj := body["error"].(map[string]any)
	// OpenAI's Error has code, message, param and type; the router's
	// error body has message, type and code, which the SDKs read.
	require.NotEmpty(t, errObj["message"])
	require.NotEmpty(t, errObj["type"])
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
