package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
)

// runFleet is an agent with one read-only tool, deployed to dev, and a
// policy that keeps its model out of prod.
const runFleet = `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: kb.search}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "TOOLS/search"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: helper}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools: [{name: kb.search}]
  policies: [prod-models]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: helper-dev}
spec: {agentRef: {name: helper}, environment: dev}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: prod-models}
spec:
  rules:
    - name: no-gpt4o
      hooks: [preflight]
      when: 'environment == "prod" && "openai:gpt-4o" in models'
      action: deny
`

// TestRunCommand runs an agent with `warden run`, following its events
// to the answer, then lists, replays and promotes.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"hits": 3}`))
	}))
	t.Cleanup(tools.Close)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		msg := map[string]any{"role": "assistant", "content": "found: " + last.Content}
		if last.Role != "tool" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "kb__search", "arguments": `{"q":"x"}`}}}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg, "finish_reason": "stop"}}})
	}))
	t.Cleanup(model.Close)

	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	admin, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler),
		Compile: compile.Options{ToolGatewayURL: "http://" + gln.Addr().String(), ModelRouterURL: model.URL}})
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeAll(sctx, ln, gln) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = st.Close()
	})
	s := &stack{t: t, srv: srv, cpURL: "http://" + ln.Addr().String(), admin: admin, home: t.TempDir()}
	cfg := clientconfig.New()
	cfg.SetContext(clientconfig.Context{Name: "local", Server: s.cpURL, Token: admin, Namespace: "default"})
	require.NoError(t, cfg.UseContext("local"))
	require.NoError(t, clientconfig.Save(s.home, cfg))
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(runFleet, "TOOLS", tools.URL)), 0o600))
	res := s.run(t, nil, "apply", "-f", file)
	require.Equal(t, ExitOK, res.code, res.stderr)

	res = s.run(t, nil, "run", "helper", "find x", "--env", "dev")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "created")
	for _, ev := range []string{"ExecutionCreated", "ExecutionStarted", "ToolCallCompleted", "ExecutionSucceeded"} {
		require.Contains(t, res.stdout, ev)
	}
	require.Contains(t, res.stdout, `found: {"hits":3}`)
	name := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(res.stdout, "\n", 2)[0], "execution/"), " created")

	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"get", []string{"get", "executions", "--agent", "helper", "--phase", "succeeded"}, ExitOK, []string{name, "Succeeded"}},
		{"get another phase", []string{"get", "executions", "--phase", "Failed"}, ExitOK, nil},
		{"unknown phase", []string{"get", "executions", "--phase", "Dancing"}, ExitUsage, nil},
		{"describe", []string{"describe", "execution", name}, ExitOK, []string{"helper-g1"}},
		{"events", []string{"executions", "events", name}, ExitOK, []string{"ModelCallCompleted"}},
		{"replay", []string{"executions", "replay", name}, ExitOK, []string{"kb.search", "true"}},
		{"cancel a finished run", []string{"executions", "cancel", name}, ExitConflict, nil},
		{"promote", []string{"promote", "helper", "--from", "dev", "--to", "staging"}, ExitOK, []string{"deployment/helper-staging"}},
		{"promote denied", []string{"promote", "helper", "--from", "staging", "--to", "prod"}, ExitRejected, nil},
		{"promote without --to", []string{"promote", "helper", "--from", "dev"}, ExitUsage, nil},
	}
	for _, tc := range cases {
		res := s.run(t, nil, tc.args...)
		require.Equal(t, tc.code, res.code, "%s: %s %s", tc.name, res.stdout, res.stderr)
		for _, w := range tc.want {
			require.Contains(t, res.stdout, w, tc.name)
		}
	}
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	require.NoError(t, os.WriteFile(suite, []byte(`agent: helper
environment: dev
cases:
  - name: finds
    prompt: find x
    expectTools: [kb.search]
    expectAnswer: hits
`), 0o600))
	res = s.run(t, nil, "eval", "run", "smoke", "-f", suite)
	require.Equal(t, ExitOK, res.code, res.stdout+res.stderr)
	require.Contains(t, res.stdout, "1 passed, 0 failed")
	require.NoError(t, os.WriteFile(suite, []byte("agent: helper\nenvironment: dev\ncases: [{name: wrong, prompt: find x, expectAnswer: nothing-like-this}]\n"), 0o600))
	res = s.run(t, nil, "eval", "run", "smoke", "-f", suite)
	require.Equal(t, ExitFailure, res.code, res.stdout+res.stderr)
	require.Contains(t, res.stdout, "FAIL")
	require.Contains(t, res.stdout, `expected the answer to contain "nothing-like-this"`)

	res = s.run(t, nil, "promote", "helper", "--from", "staging", "--to", "prod")
	require.Contains(t, res.stderr, "PolicyDenied")
	require.Contains(t, res.stderr, "prod-models@")
}
