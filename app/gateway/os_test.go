package gateway_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/sandbox"
	"github.com/warden-dev/warden/app/server"
)

func TestOSToolRunsInTheSandbox(t *testing.T) {
	t.Parallel()
	runner, err := sandbox.New(context.Background(), sandbox.Config{})
	require.NoError(t, err, "the sandbox must work here: apt-get install -y bubblewrap")
	secretDir := t.TempDir()
	secretFile := filepath.Join(secretDir, "secret.txt")
	require.NoError(t, os.WriteFile(secretFile, []byte("top secret"), 0o644))

	ts := newToolServer(t)
	e := start(t, envOptions{storeURL: "sqlite://" + t.TempDir() + "/w.db", tools: ts,
		cfg: func(c *server.Config) { c.Sandbox = gateway.Sandbox{Runner: runner} }})
	e.apply(fixture(ts.URL))
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: shell.exec}
spec:
  source: os
  sideEffect: code_execution
  os:
    command: ["/bin/sh", "-c", "cat; echo; cat ` + secretFile + ` || echo unreadable; sleep ${SLEEP:-0}"]
    timeout: 2s
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: shell.hang}
spec:
  source: os
  sideEffect: code_execution
  os:
    command: ["/bin/sh", "-c", "sleep 30"]
    timeout: 300ms
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: runner}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools: [{name: shell.exec}, {name: shell.hang}]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: runner-dev}
spec: {agentRef: {name: runner}, environment: dev}
`)
	tok := e.token("default", "runner", "dev")
	r := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", tok, map[string]any{"tool": "shell.exec", "input": map[string]any{"n": 1}}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	out := r.output()
	require.Contains(t, out["stdout"], `{"n":1}`, "the input arrives on stdin")
	require.Contains(t, out["stdout"], "unreadable", "a file outside the allowance cannot be read")
	require.NotContains(t, out["stdout"], "top secret")

	hang := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", tok, map[string]any{"tool": "shell.hang", "input": map[string]any{}}, nil)
	require.Equal(t, http.StatusGatewayTimeout, hang.status, string(hang.raw))
	require.Equal(t, "Timeout", hang.code())
}
