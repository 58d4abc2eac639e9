package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/workload"
)

// backends are the store URLs the scenarios run against.
func backends() map[string]func(t testing.TB) string {
	return map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "warden.db") },
		"postgres": func(t testing.TB) string { return pgtest.NewDatabase(t) },
	}
}

// fakeOpenAI speaks OpenAI's Chat Completions and Embeddings wire format.
// mode chooses its behaviour: ok, 429, 500, 400, slow (answers after
// release is closed), midstream (streams two chunks, then drops the
// connection), stall (streams two chunks, then waits for the caller to go
// away).
type fakeOpenAI struct {
	*httptest.Server
	mode    atomic.Value
	calls   atomic.Int64
	mu      sync.Mutex
	lastReq map[string]any
	lastHdr http.Header
	release chan struct{}
	// cancelled counts requests whose client went away while slow.
	cancelled atomic.Int64
}

func newFakeOpenAI(t testing.TB) *fakeOpenAI {
	f := &fakeOpenAI{release: make(chan struct{})}
	f.mode.Store("ok")
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.Close()
	})
	return f
}

func (f *fakeOpenAI) set(mode string) { f.mode.Store(mode) }

func (f *fakeOpenAI) last() (map[string]any, http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastReq, f.lastHdr
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.lastReq, f.lastHdr = req, r.Header.Clone()
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch f.mode.Load().(string) {
	case "429":
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
		return
	case "400":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`)
		return
	case "401":
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-test-********ai. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	case "slow":
		select {
		case <-f.release:
		case <-r.Context().Done():
			f.cancelled.Add(1)
			return
		}
	}
	model, _ := req["model"].(string)
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		_, _ = fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,0.3]}],"model":%q,"usage":{"prompt_tokens":4,"total_tokens":4}}`, model)
		return
	}
	tools, _ := req["tools"].([]any)
	if stream, _ := req["stream"].(bool); stream {
		f.stream(w, r, model, req, len(tools) > 0)
		return
	}
	msg := `{"role":"assistant","content":"Hello from OpenAI.","refusal":null,"annotations":[]}`
	finish := "stop"
	if len(tools) > 0 {
		msg = `{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`
		finish = "tool_calls"
	}
	_, _ = fmt.Fprintf(w, `{"id":"chatcmpl-123","object":"chat.completion","created":1764000000,"model":%q,"system_fingerprint":"fp_1","service_tier":"default","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`, model, msg, finish)
}

func (f *fakeOpenAI) stream(w http.ResponseWriter, r *http.Request, model string, req map[string]any, tools bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(s string) {
		_, _ = io.WriteString(w, "data: "+s+"\n\n")
		fl.Flush()
	}
	chunk := func(delta, finish string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1764000000,"model":%q,"system_fingerprint":"fp_1","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`, model, delta, finish)
	}
	send(chunk(`{"role":"assistant","content":"","refusal":null}`, "null"))
	if tools {
		send(chunk(`{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"))
		send(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null"))
		send(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"))
		send(chunk(`{}`, `"tool_calls"`))
	} else {
		send(chunk(`{"content":"Hello"}`, "null"))
		switch f.mode.Load().(string) {
		case "midstream":
			panic(http.ErrAbortHandler)
		case "stall":
			<-r.Context().Done()
			f.cancelled.Add(1)
			return
		}
		send(chunk(`{"content":" from OpenAI."}`, "null"))
		send(chunk(`{}`, `"stop"`))
	}
	if so, _ := req["stream_options"].(map[string]any); so["include_usage"] == true {
		send(fmt.Sprintf(`{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1764000000,"model":%q,"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`, model))
	}
	send("[DONE]")
}

// fakeAnthropic speaks Anthropic's Messages wire format. mode: ok, 529
// (overloaded), 400.
type fakeAnthropic struct {
	*httptest.Server
	mode    atomic.Value
	calls   atomic.Int64
	mu      sync.Mutex
	lastReq map[string]any
	lastHdr http.Header
}

func newFakeAnthropic(t testing.TB) *fakeAnthropic {
	f := &fakeAnthropic{}
	f.mode.Store("ok")
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) last() (map[string]any, http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastReq, f.lastHdr
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.lastReq, f.lastHdr = req, r.Header.Clone()
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`)
		return
	}
	switch f.mode.Load().(string) {
	case "529":
		w.WriteHeader(529)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	case "400":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`)
		return
	}
	model, _ := req["model"].(string)
	tools, _ := req["tools"].([]any)
	if stream, _ := req["stream"].(bool); stream {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(event, data string) {
			_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
			fl.Flush()
		}
		send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`, model))
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		send("ping", `{"type": "ping"}`)
		send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`)
		send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" from Claude."}}`)
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		stop := "end_turn"
		if len(tools) > 0 {
			send("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`)
			send("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`)
			send("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`)
			send("content_block_stop", `{"type":"content_block_stop","index":1}`)
			stop = "tool_use"
		}
		send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":9}}`, stop))
		send("message_stop", `{"type":"message_stop"}`)
		return
	}
	content := `[{"type":"text","text":"Hello from Claude."}]`
	stop := "end_turn"
	if len(tools) > 0 {
		content = `[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]`
		stop = "tool_use"
	}
	_, _ = fmt.Fprintf(w, `{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":9}}`, model, content, stop)
}

// env is a running Warden with the model router and two providers.
type env struct {
	t      testing.TB
	st     store.Store
	srv    *server.Server
	cpURL  string
	url    string
	admin  string
	oa     *fakeOpenAI
	an     *fakeAnthropic
	events chan events.Event
}

// fixture: Models primary (OpenAI-compatible, tools, streaming), claude
// (Anthropic, tools, streaming), small (no tools, a small context
// window), agent bot routing primary → claude, agent lean routing small →
// claude, agent emb routing embedder; a policy that denies primary in
// prod.
func fixture(oa, an string) string {
	return strings.NewReplacer("OPENAI", oa, "ANTHROPIC", an).Replace(`apiVersion: warden.dev/v1alpha1
kind: Secret
metadata: {name: provider-keys}
spec:
  data: {openai: sk-test-openai, anthropic: sk-ant-test}
---
apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: primary}
spec:
  provider: local
  model: gpt-4o
  endpoint: OPENAI/v1
  apiKeySecretRef: {name: provider-keys, key: openai}
  capabilities: {toolUse: true, streaming: true, jsonMode: true, contextWindow: 128000}
  cost: {inputPerMillion: 2.5, outputPerMillion: 10}
---
apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: claude}
spec:
  provider: anthropic
  model: claude-sonnet-4-5
  endpoint: ANTHROPIC/v1
  apiKeySecretRef: {name: provider-keys, key: anthropic}
  capabilities: {toolUse: true, streaming: true, vision: true, contextWindow: 200000}
  cost: {inputPerMillion: 3, outputPerMillion: 15}
---
apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: small}
spec:
  provider: local
  model: tiny
  endpoint: OPENAI/v1
  capabilities: {streaming: true, contextWindow: 64}
---
apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: embedder}
spec:
  provider: local
  model: text-embedding-3-small
  endpoint: OPENAI/v1
  cost: {inputPerMillion: 0.02}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: primary, fallback: [claude]}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: lean}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: small, fallback: [claude]}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: emb}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: embedder}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: no-primary-in-prod}
spec:
  version: "2"
  rules:
    - name: deny-primary
      hooks: [preflight]
      when: 'environment == "prod" && models.exists(m, m == "local:gpt-4o")'
      action: deny
      message: gpt-4o is not approved for prod
`)
}

type envOptions struct {
	storeURL string
	// attempt is the router's attempt timeout.
	attempt time.Duration
	// tracer receives the router's spans.
	tracer trace.TracerProvider
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	if o.storeURL == "" {
		o.storeURL = "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
	}
	st, err := backend.Open(ctx, o.storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	admin, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	srv, err := server.New(server.Config{Store: st, RouterAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Tracer: o.tracer})
	require.NoError(t, err)
	if o.attempt > 0 {
		srv.Router().SetAttemptTimeout(o.attempt)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	go func() { done <- srv.Router().Serve(sctx, rln) }()
	e := &env{t: t, st: st, srv: srv, cpURL: "http://" + ln.Addr().String(), url: "http://" + rln.Addr().String(), admin: admin,
		oa: newFakeOpenAI(t), an: newFakeAnthropic(t), events: make(chan events.Event, 1024)}
	unsub := srv.Bus().Subscribe(func(ev events.Event) {
		select {
		case e.events <- ev:
		default:
		}
	})
	t.Cleanup(func() {
		unsub()
		cancel()
		<-done
		<-done
		srv.Router().Close()
	})
	e.apply(fixture(e.oa.URL, e.an.URL))
	return e
}

func (e *env) apply(yaml string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.cpURL+"/v1/resources/apply", strings.NewReader(yaml))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "application/yaml")
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	require.Equal(e.t, http.StatusOK, res.StatusCode, string(b))
}

// token mints a workload token of agent for the model router.
func (e *env) token(tenant, ns, agent, environment string) string {
	e.t.Helper()
	tok, _, err := e.srv.Issuer().Issue(context.Background(), workload.IssueParams{
		Tenant: tenant, Namespace: ns, Agent: agent, Environment: environment, Audience: workload.AudienceModelRouter})
	require.NoError(e.t, err)
	return tok
}

func (e *env) bot() string { return e.token(server.LocalTenant, "default", "bot", "dev") }

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r resp) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func do(t testing.TB, method, url, token string, body any, header map[string]string) resp {
	t.Helper()
	var rdr io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rdr = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		rdr = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rdr)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := resp{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// chat is a minimal chat request.
func chat(extra map[string]any) map[string]any {
	m := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hello"}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// waitEvent waits for an event of typ and returns it.
func (e *env) waitEvent(typ string) events.Event {
	e.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.events:
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			e.t.Fatalf("no %s event", typ)
		}
	}
}

// explain reads the explanation of route name for execution.
func (e *env) explain(token, name, execution string) resp {
	e.t.Helper()
	return do(e.t, http.MethodGet, e.url+"/v1/route/"+name+"/explain?execution="+execution, token, nil, nil)
}

// candidates returns the candidates of the i-th decision of an explanation.
func candidates(t testing.TB, r resp, i int) []map[string]any {
	t.Helper()
	ds, _ := r.body["decisions"].([]any)
	require.Greater(t, len(ds), i, string(r.raw))
	d := ds[i].(map[string]any)
	var out []map[string]any
	for _, c := range d["candidates"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

// newTenant creates a tenant with a default namespace and an owner key.
func newTenant(t testing.TB, st store.Store, tenant string) string {
	t.Helper()
	secret, hash, err := auth.NewAPIKeySecret()
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		ns := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: "default"}, Spec: map[string]any{}}
		if _, err := tx.ResourceCreate(ctx, ns); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "owner-" + tenant, Tenant: tenant, Name: "owner", SecretHash: hash,
			Namespace: auth.AllNamespaces, Role: auth.RoleOwner, CreatedAt: time.Now()})
	}))
	return secret
}

func workloadParams(ns, agent, environment, audience string) workload.IssueParams {
	return workload.IssueParams{Tenant: server.LocalTenant, Namespace: ns, Agent: agent, Environment: environment, Audience: audience}
}
