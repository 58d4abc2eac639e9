package execution_test

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/jobs"
)

// backends are the store URLs the scenarios run against.
func backends() map[string]func(t testing.TB) string {
	return map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "warden.db") },
		"postgres": func(t testing.TB) string { return pgtest.NewDatabase(t) },
	}
}

// toolServer is a real HTTP tool implementation that counts executions.
type toolServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newToolServer(t testing.TB) *toolServer {
	ts := &toolServer{calls: map[string]int{}}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		ts.mu.Lock()
		ts.calls[r.URL.Path]++
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/search":
			_ = json.NewEncoder(w).Encode(map[string]any{"results": []any{"ticket 1"}, "query": in["query"]})
		case "/create":
			_ = json.NewEncoder(w).Encode(map[string]any{"id": 42, "title": in["title"]})
		case "/refund":
			_ = json.NewEncoder(w).Encode(map[string]any{"refunded": in["amount"]})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *toolServer) count(path string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls[path]
}

// modelServer speaks the OpenAI Chat Completions wire format. It is
// stateless: the conversation decides. A user prompt "search Q",
// "ticket T" or "refund N" makes it ask for crm.search, tickets.create
// or payments.refund; once a tool result is in the conversation it
// answers "answer: <result>". "loop" asks for a tool forever, "hello"
// answers at once.
type modelServer struct {
	*httptest.Server
	mu sync.Mutex
	// claims are the workload token claims of every request.
	claims []map[string]any
	// tools are the function names offered in the last request.
	tools []string
}

func newModelServer(t testing.TB) *modelServer {
	ms := &modelServer{}
	ms.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ms.mu.Lock()
		ms.claims = append(ms.claims, jwtClaims(r.Header.Get("Authorization")))
		ms.tools = nil
		for _, t := range req.Tools {
			ms.tools = append(ms.tools, t.Function.Name)
		}
		ms.mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		prompt := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt = m.Content
			}
		}
		verb, arg, _ := strings.Cut(prompt, " ")
		msg := map[string]any{"role": "assistant"}
		finish := "tool_calls"
		call := func(fn string, args any) {
			b, _ := json.Marshal(args)
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", len(req.Messages)), "type": "function",
				"function": map[string]any{"name": fn, "arguments": string(b)}}}
		}
		switch {
		case last.Role == "tool" && verb != "loop":
			msg["content"] = "answer: " + last.Content
			finish = "stop"
		case verb == "search":
			call("crm__search", map[string]any{"query": arg})
		case verb == "ticket":
			call("tickets__create", map[string]any{"title": arg})
		case verb == "refund":
			call("payments__refund", map[string]any{"amount": 10})
		case verb == "loop":
			call("crm__search", map[string]any{"query": fmt.Sprint(len(req.Messages))})
		default:
			msg["content"] = "hello there"
			finish = "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}})
	}))
	t.Cleanup(ms.Close)
	return ms
}

// jwtClaims decodes the claims of a bearer JWT without verifying it.
func jwtClaims(header string) map[string]any {
	parts := strings.Split(strings.TrimPrefix(header, "Bearer "), ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

func fixture(tools string) string {
	return strings.ReplaceAll(`apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: crm.search}
spec:
  description: Search the CRM.
  source: rest
  sideEffect: read_only
  rest: {url: "TOOLS/search"}
  inputSchema: {type: object, required: [query], properties: {query: {type: string}}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: tickets.create}
spec:
  source: rest
  sideEffect: external_write
  rest: {url: "TOOLS/create"}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: payments.refund}
spec:
  source: rest
  sideEffect: financial
  rest: {url: "TOOLS/refund"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  systemPrompt: You help customers.
  modelRoute: {primary: m1}
  tools: [{name: crm.search}, {name: tickets.create}, {name: payments.refund}]
  policies: [guard]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: bot-dev}
spec: {agentRef: {name: bot}, environment: dev}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: guard}
spec:
  version: "2"
  rules:
    - name: no-gpt4o-in-prod
      hooks: [preflight]
      when: 'environment == "prod" && "openai:gpt-4o" in models'
      action: deny
      message: gpt-4o is not approved for production
`, "TOOLS", tools)
}

// env is a running Warden: control plane, tool gateway and the execution
// jobs on River, with a fake model router.
type env struct {
	t      testing.TB
	st     store.Store
	cpURL  string
	gwURL  string
	admin  string
	tools  *toolServer
	model  *modelServer
	cancel context.CancelFunc
	done   chan error
	queue  *jobs.Queue
}

func start(t testing.TB, storeURL string) *env { return startWith(t, storeURL, true, "") }

// startWith starts Warden on storeURL; with work false the job queue
// takes jobs but works none (a process that dies before running them).
// admin is the admin key of a store bootstrapped before.
func startWith(t testing.TB, storeURL string, work bool, admin string) *env {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	if key, _, err := server.Bootstrap(ctx, st, nil); key != "" || err != nil {
		require.NoError(t, err)
		admin = key
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &env{t: t, st: st, admin: admin, cpURL: "http://" + ln.Addr().String(), gwURL: "http://" + gln.Addr().String(),
		tools: newToolServer(t), model: newModelServer(t)}
	workers := river.NewWorkers()
	execs := jobs.NewExecutions(workers)
	qcfg := jobs.Config{Workers: workers, TestOnly: true}
	if pg, ok := st.(interface{ Pool() *pgxpool.Pool }); ok {
		e.queue, err = jobs.OpenPostgres(ctx, storeURL, pg.Pool(), qcfg)
	} else {
		e.queue, err = jobs.OpenSQLite(ctx, strings.TrimPrefix(storeURL, "sqlite://"), qcfg)
	}
	require.NoError(t, err)
	execs.SetQueue(e.queue)
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), PublicURL: e.cpURL,
		Compile: compile.Options{ToolGatewayURL: e.gwURL, ModelRouterURL: e.model.URL}, ExecutionQueue: execs})
	require.NoError(t, err)
	execs.Bind(srv.Executions())
	if work {
		require.NoError(t, e.queue.Start(ctx))
	}
	sctx, cancel := context.WithCancel(ctx)
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- srv.ServeAll(sctx, ln, gln) }()
	t.Cleanup(e.stop)
	e.apply(e.admin, fixture(e.tools.URL))
	return e
}

// stop stops the servers and the queue and closes the store; once.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	_ = e.queue.Stop(context.Background())
	e.cancel()
	<-e.done
	_ = e.st.Close()
	e.cancel = nil
}

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

func (r resp) name() string {
	md, _ := r.body["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

func (r resp) phase() string {
	st, _ := r.body["status"].(map[string]any)
	s, _ := st["phase"].(string)
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
	if rdr != nil {
		req.Header.Set("Content-Type", "application/json")
	}
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

func (e *env) apply(token, yaml string) {
	e.t.Helper()
	r := do(e.t, http.MethodPost, e.cpURL+"/v1/resources/apply", token, yaml, map[string]string{"Content-Type": "application/yaml"})
	require.Equal(e.t, http.StatusOK, r.status, string(r.raw))
}

// run creates an execution of bot with prompt and returns its name.
func (e *env) run(prompt string) string {
	e.t.Helper()
	r := do(e.t, http.MethodPost, e.cpURL+"/v1/namespaces/default/executions", e.admin,
		map[string]any{"agent": "bot", "prompt": prompt, "environment": "dev"}, nil)
	require.Equal(e.t, http.StatusCreated, r.status, string(r.raw))
	return r.name()
}

// waitPhase waits until execution name reaches phase and returns it.
func (e *env) waitPhase(name, phase string) resp {
	e.t.Helper()
	var last resp
	require.Eventually(e.t, func() bool {
		last = do(e.t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions/"+name, e.admin, nil, nil)
		return last.phase() == phase
	}, 30*time.Second, 20*time.Millisecond, "execution %s never reached %s", name, phase)
	return last
}

// eventTypes lists the types of an execution's recorded events.
func (e *env) eventTypes(name string) []string {
	e.t.Helper()
	r := do(e.t, http.MethodGet, e.cpURL+"/v1/namespaces/default/executions/"+name+"/events", e.admin, nil, nil)
	require.Equal(e.t, http.StatusOK, r.status, string(r.raw))
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.raw)), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Type string `json:"type"`
		}
		require.NoError(e.t, json.Unmarshal([]byte(line), &ev), line)
		types = append(types, ev.Type)
	}
	return types
}

// newTenant creates tenant with a default namespace and an owner key.
func newTenant(t *testing.T, st store.Store, tenant string) string {
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
