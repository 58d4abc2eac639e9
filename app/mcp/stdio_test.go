package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/sandbox"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

// stdioToken is the Secret value the stdio servers of the tests get in
// $TOKEN; it must never show up in status, logs or errors.
const stdioToken = "tok-7c1e9f0b2d4a-stdio-secret"

// stdioEnv is a running Warden whose MCP gateway has the OS sandbox, with
// the stdio server "local" (the test binary in mode serve; $TOKEN from a
// Secret, $STARTS_FILE a plain value) used by the agent bot.
type stdioEnv struct {
	*env
	exe    string
	dir    string // allowed for writing: holds the starts file
	starts string
	logs   *syncBuffer
}

// syncBuffer is a log sink the gateway writes to from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newStdioEnv(t testing.TB, storeURL string) *stdioEnv {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && testing.Short() {
		t.Skip("bwrap not installed (apt-get install -y bubblewrap); skipped in -short mode")
	}
	runner, err := sandbox.New(context.Background(), sandbox.Config{TempDir: t.TempDir()})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	logs := &syncBuffer{}
	e := &stdioEnv{exe: exe, dir: t.TempDir(), logs: logs}
	e.starts = filepath.Join(e.dir, "starts")
	e.env = newEnv(t, storeURL, func(c *server.Config) {
		c.StdioSandbox = runner
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: Secret
metadata: {name: stdio-token}
spec: {data: {token: "` + stdioToken + `"}}
---
` + e.stdioServer("local", "serve") + `
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  mcpServers: [{name: fake}, {name: local}]
`)
	require.Empty(t, e.statusOf("local").Error)
	return e
}

// stdioServer is the YAML of a stdio MCPServer running the test binary in
// mode.
func (e *stdioEnv) stdioServer(name, mode string, args ...string) string {
	quoted := `"` + strings.Join(append([]string{mode}, args...), `", "`) + `"`
	return `apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: ` + name + `}
spec:
  transport: stdio
  command: ["` + e.exe + `", "` + stdioServerArg + `"]
  args: [` + quoted + `]
  env:
  - {name: STARTS_FILE, value: "` + e.starts + `"}
  - {name: TOKEN, secretKeyRef: {name: stdio-token, key: token}}
  sandbox: {allowRead: ["` + e.exe + `"], allowWrite: ["` + e.dir + `"], memoryMB: 0}`
}

// startCount is how many processes of mode serve started so far.
func (e *stdioEnv) startCount() int {
	b, err := os.ReadFile(e.starts)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(e.t, err)
	return strings.Count(string(b), "started\n")
}

// process is the process the gateway runs for a server, or nil.
func (e *stdioEnv) process(name string) *sandbox.Process {
	return e.srv.MCP().StdioProcess(server.LocalTenant, "default", name)
}

// callText calls a tool of a server as bot.
func (e *stdioEnv) callText(name, tool string, args map[string]any) resp {
	e.t.Helper()
	return do(e.t, http.MethodPost, e.mcpURL+"/v1/mcp/"+name+"/call", e.token(server.LocalTenant, "bot"), rpc(tool, args))
}

func text(t testing.TB, r resp) string {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	content := r.result()["content"].([]any)
	return content[0].(map[string]any)["text"].(string)
}

// requireNoToken fails when the Secret value appears in the server's
// stored object or in the logs.
func (e *stdioEnv) requireNoToken(name string) {
	e.t.Helper()
	var obj *resource.Object
	require.NoError(e.t, e.st.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		var err error
		obj, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindMCPServer, Namespace: "default", Name: name})
		return err
	}))
	raw, err := json.Marshal(obj)
	require.NoError(e.t, err)
	require.NotContains(e.t, string(raw), stdioToken)
	require.NotContains(e.t, e.logs.String(), stdioToken)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestStdioDiscoverAndCall runs a stdio server (Go SDK) in the OS
// sandbox: discovery and governed calls share its one process, and the
// Secret in its environment reaches it without showing anywhere.
func TestStdioDiscoverAndCall(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newStdioEnv(t, url(t))
			st := e.statusOf("local")
			require.Equal(t, "stdio", st.Transport)
			require.Equal(t, "stdio-test", st.Server.Name)
			require.NotEmpty(t, st.ProtocolVersion)
			var tools []string
			for _, tl := range st.Tools {
				tools = append(tools, tl.Name)
				require.Equal(t, resource.SideEffectReadOnly, tl.SideEffect, tl.Name)
			}
			require.Equal(t, []string{"echo", "env_sha256", "instance"}, tools)

			r := e.callText("local", "echo", map[string]any{"text": "hello over stdio"})
			require.Equal(t, "hello over stdio", text(t, r))
			require.Equal(t, "Succeeded", e.toolCall(r.header.Get("Warden-Tool-Call")).Status["phase"])
			r = do(t, http.MethodPost, e.mcpURL+"/v1/mcp/call", e.token(server.LocalTenant, "bot"), rpc("local.env_sha256", map[string]any{"name": "TOKEN"}))
			require.Equal(t, sha256Hex(stdioToken), text(t, r), "the Secret reaches the process")

			require.Equal(t, 1, e.startCount(), "discovery and calls share one process")
			e.requireNoToken("local")

			// Another tenant's agent cannot reach the server.
			r = do(t, http.MethodPost, e.mcpURL+"/v1/mcp/local/call", newTenant(t, e.st, "acme"), rpc("echo", map[string]any{"text": "x"}))
			require.NotEqual(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, 1, e.startCount())
		})
	}
}

// TestStdioRestartsAfterKill kills the process: the next calls are served
// by a new one.
func TestStdioRestartsAfterKill(t *testing.T) {
	t.Parallel()
	e := newStdioEnv(t, backends()["sqlite"](t))
	first := text(t, e.callText("local", "instance", map[string]any{"nonce": "before"}))
	proc := e.process("local")
	require.NotNil(t, proc)
	proc.Kill()
	<-proc.Done()
	var second string
	require.Eventually(t, func() bool {
		r := e.callText("local", "instance", map[string]any{"nonce": "after"})
		if r.status != http.StatusOK {
			return false
		}
		second = text(t, r)
		return true
	}, time.Minute, 50*time.Millisecond)
	require.NotEqual(t, first, second, "a new process answers")
	require.Equal(t, 2, e.startCount())
	require.Contains(t, e.logs.String(), "restarting")
}

// TestStdioQuarantineStopsTheProcess quarantines a running stdio server:
// its process stops, and neither calls nor discoveries start another one
// until the quarantine is lifted.
func TestStdioQuarantineStopsTheProcess(t *testing.T) {
	t.Parallel()
	e := newStdioEnv(t, backends()["sqlite"](t))
	require.Equal(t, "x", text(t, e.callText("local", "echo", map[string]any{"text": "x"})))
	proc := e.process("local")
	require.NotNil(t, proc)

	r := do(t, http.MethodPost, e.mcpURL+"/v1/mcp/local/quarantine", e.admin, map[string]any{"reason": "under review"})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	select {
	case <-proc.Done():
	case <-time.After(time.Minute):
		t.Fatal("the process still runs after the quarantine")
	}
	for range 3 {
		r = e.callText("local", "echo", map[string]any{"text": "x"})
		require.NotEqual(t, http.StatusOK, r.status, string(r.raw))
		require.Contains(t, string(r.raw), "quarantined")
		e.statusOf("local")
	}
	require.Nil(t, e.process("local"))
	require.Equal(t, 1, e.startCount(), "no process starts while quarantined")

	r = do(t, http.MethodPost, e.mcpURL+"/v1/mcp/local/unquarantine", e.admin, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Eventually(t, func() bool {
		return e.callText("local", "echo", map[string]any{"text": "y"}).status == http.StatusOK
	}, time.Minute, 50*time.Millisecond)
	require.Equal(t, 2, e.startCount())
}

// TestStdioStopsOnChange: deleting the server, changing its spec or
// rotating a Secret it references stops its process; the next use starts
// one with the new configuration.
func TestStdioStopsOnChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(e *stdioEnv)
		after  func(t *testing.T, e *stdioEnv)
	}{
		{
			name: "delete",
			change: func(e *stdioEnv) {
				r := do(e.t, http.MethodDelete, e.cpURL+"/v1/namespaces/default/mcpservers/local", e.admin, nil)
				require.Equal(e.t, http.StatusOK, r.status, string(r.raw))
			},
			after: func(t *testing.T, e *stdioEnv) {
				require.Nil(t, e.process("local"))
			},
		},
		{
			name:   "spec",
			change: func(e *stdioEnv) { e.apply(e.stdioServer("local", "serve", "--verbose")) },
			after: func(t *testing.T, e *stdioEnv) {
				require.Equal(t, "z", text(t, e.callText("local", "echo", map[string]any{"text": "z"})))
			},
		},
		{
			name: "secret rotation",
			change: func(e *stdioEnv) {
				e.apply("apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata: {name: stdio-token}\nspec: {data: {token: rotated-token-value}}\n")
			},
			after: func(t *testing.T, e *stdioEnv) {
				got := text(t, e.callText("local", "env_sha256", map[string]any{"name": "TOKEN"}))
				require.Equal(t, sha256Hex("rotated-token-value"), got, "the new process has the new value")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newStdioEnv(t, backends()["sqlite"](t))
			require.Equal(t, "x", text(t, e.callText("local", "echo", map[string]any{"text": "x"})))
			proc := e.process("local")
			require.NotNil(t, proc)
			tt.change(e)
			select {
			case <-proc.Done():
			case <-time.After(time.Minute):
				t.Fatal("the process still runs after the change")
			}
			tt.after(t, e)
		})
	}
}

// TestStdioFailuresAreClear: a server that writes garbage to stdout, and
// one that prints its secret and exits, give errors that say so (the
// secret masked) while the gateway keeps serving the others.
func TestStdioFailuresAreClear(t *testing.T) {
	t.Parallel()
	e := newStdioEnv(t, backends()["sqlite"](t))
	e.apply(e.stdioServer("noisy", "garbage") + "\n---\n" + e.stdioServer("leaky", "leak") + `
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  mcpServers: [{name: fake}, {name: local}, {name: noisy}, {name: leaky}]
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: noisy.echo}
spec: {source: mcp, sideEffect: read_only, mcp: {server: noisy, tool: echo}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: leaky.echo}
spec: {source: mcp, sideEffect: read_only, mcp: {server: leaky, tool: echo}}
`)
	tests := []struct {
		server string
		want   []string
	}{
		{server: "noisy", want: []string{"line 1 of its stdout, which is not a JSON-RPC message", "only JSON-RPC messages to stdout"}},
		{server: "leaky", want: []string{"exited with code 3", "token=[REDACTED]"}},
	}
	for _, tt := range tests {
		st := e.statusOf(tt.server)
		for _, w := range tt.want {
			require.Contains(t, st.Error, w, tt.server)
		}
		r := e.callText(tt.server, "echo", map[string]any{"text": "x"})
		require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.raw))
		for _, w := range tt.want {
			require.Contains(t, string(r.raw), w, tt.server)
		}
		require.NotContains(t, string(r.raw), stdioToken)
		e.requireNoToken(tt.server)
	}
	require.Equal(t, "still up", text(t, e.callText("local", "echo", map[string]any{"text": "still up"})))
}

// TestStdioServerEverything runs the reference server of the MCP project
// (TypeScript SDK) in stdio mode, in the OS sandbox, under node.
func TestStdioServerEverything(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(EnvServerEverything)
	if bin == "" {
		t.Skip("set " + EnvServerEverything + " to run @modelcontextprotocol/server-everything over stdio")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	// node_modules/@modelcontextprotocol/server-everything/dist/index.js
	modules := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(script))))
	e := newStdioEnv(t, backends()["sqlite"](t))
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: everything}
spec:
  transport: stdio
  command: ["` + node + `", "` + script + `"]
  args: [stdio]
  sandbox: {allowRead: ["` + modules + `"]}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  mcpServers: [{name: everything}]
`)
	st := e.statusOf("everything")
	require.Empty(t, st.Error)
	require.Equal(t, "stdio", st.Transport)
	require.NotEmpty(t, st.Server.Name)
	require.NotEmpty(t, st.Prompts)
	r := e.callText("everything", "echo", map[string]any{"message": "hello over stdio"})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), "hello over stdio")
}

// BenchmarkStdioCall measures step 7 of a call (the gateway's MCPCaller)
// to a read-only echo tool over stdio, against the same over streamable
// HTTP: what the transport and the sandboxed process cost.
func BenchmarkStdioCall(b *testing.B) {
	e := newStdioEnv(b, backends()["sqlite"](b))
	e.discover()
	svc := e.srv.MCP()
	for _, name := range []string{"local", "fake"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if _, err := svc.CallTool(ctx, server.LocalTenant, "default", name, "echo", map[string]any{"text": "hi"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
