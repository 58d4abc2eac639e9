package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
)

// EnvServerEverything names the npm package's entry point
// (node_modules/.bin/mcp-server-everything) for TestServerEverything;
// without it the test looks for mcp-server-everything on PATH and skips
// when there is none (.ci/run installs it with npm).
const EnvServerEverything = "WARDEN_TEST_MCP_EVERYTHING"

// startServerEverything runs @modelcontextprotocol/server-everything in
// streamable-HTTP mode and returns its endpoint once it listens.
func startServerEverything(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(EnvServerEverything)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("mcp-server-everything"); err != nil {
			t.Skip("@modelcontextprotocol/server-everything is not installed: npm install it and set " + EnvServerEverything)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	// Wait for its "listening on port" line.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on port") {
			break
		}
	}
	require.NoError(t, sc.Err())
	go func() {
		for sc.Scan() {
		}
	}()
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

// TestServerEverything discovers and calls the reference server of the
// MCP project (TypeScript SDK): text, an image and resource links.
func TestServerEverything(t *testing.T) {
	t.Parallel()
	url := startServerEverything(t)
	e := newEnv(t, backends()["sqlite"](t))
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: everything}
spec: {url: "` + url + `"}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  mcpServers: [{name: fake}, {name: everything}]
`)
	st := e.statusOf("everything")
	require.Empty(t, st.Error)
	require.Equal(t, "streamable-http", st.Transport)
	require.NotEmpty(t, st.Server.Name)
	byName := map[string]resource.MCPToolStatus{}
	for _, tl := range st.Tools {
		byName[tl.Name] = tl
	}
	require.Contains(t, byName, "echo")
	require.Equal(t, resource.SideEffectReadOnly, byName["echo"].SideEffect)
	require.NotEmpty(t, st.Prompts)
	require.NotEmpty(t, st.Resources)

	bot := e.token(server.LocalTenant, "bot")
	r := do(t, http.MethodPost, e.mcpURL+"/v1/mcp/call", bot, rpc("everything.echo", map[string]any{"message": "hello everything"}))
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), "hello everything")

	r = do(t, http.MethodPost, e.mcpURL+"/v1/mcp/everything/call", bot, rpc("get-tiny-image", map[string]any{}))
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	var sawImage bool
	for _, c := range r.result()["content"].([]any) {
		if m := c.(map[string]any); m["type"] == "image" {
			sawImage = true
			require.NotEmpty(t, m["data"])
		}
	}
	require.True(t, sawImage, string(r.raw))
	rec := e.toolCall(r.header.Get("Warden-Tool-Call"))
	for _, c := range rec.Status["output"].(map[string]any)["content"].([]any) {
		if m := c.(map[string]any); m["type"] == "image" {
			require.Nil(t, m["data"])
			require.NotNil(t, m["sha256"])
		}
	}

	cs := e.connect(bot, nil)
	require.Contains(t, toolNames(t, cs), "everything.echo")
}

// TestTypeScriptClient connects the official TypeScript SDK's client to
// the per-agent endpoint /mcp: it lists the agent's tools and calls one.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(EnvServerEverything)
	if bin == "" {
		t.Skip("the npm @modelcontextprotocol/sdk comes with server-everything: set " + EnvServerEverything)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	// node_modules/.bin/mcp-server-everything → node_modules/@modelcontextprotocol/sdk
	sdkDir := filepath.Join(filepath.Dir(filepath.Dir(bin)), "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdkDir, "package.json")); err != nil {
		t.Skip("no @modelcontextprotocol/sdk next to " + bin)
	}
	e := newEnv(t, backends()["sqlite"](t))
	e.discover()
	out, err := exec.Command("node", "testdata/ts-client.mjs", sdkDir, e.mcpURL+"/mcp", e.token(server.LocalTenant, "bot"),
		"fake.echo", `{"text":"from typescript"}`).CombinedOutput()
	require.NoError(t, err, string(out))
	var got struct {
		Tools  []string `json:"tools"`
		Result struct {
			Content []map[string]any `json:"content"`
			IsError bool             `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Equal(t, []string{"fake.delete_all", "fake.echo", "fake.fail", "fake.picture"}, got.Tools)
	require.False(t, got.Result.IsError)
	require.Equal(t, "from typescript", got.Result.Content[0]["text"])
	require.EqualValues(t, 1, e.fake.calls.Load())
}
