package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc/oidctest"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/tenants"
)

// started is a warden command running in the background until its test
// ends.
type started struct {
	out  *syncBuffer
	done chan int
}

// startWarden runs warden with args in the background until it says it
// is serving, and stops it when the test ends. It reports false, having
// stopped it, when it exited first with a bind error (a port taken by
// another test between being chosen and bound): the caller tries again on
// other ports.
func startWarden(t *testing.T, home string, args ...string) (*started, bool) {
	t.Helper()
	s := &started{out: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	go func() { s.done <- RunWith(ctx, upEnv(home, s.out, s.out), append([]string{"warden"}, args...)) }()
	code, exited := 0, false
	require.Eventually(t, func() bool {
		select {
		case code = <-s.done:
			exited = true
			return true
		default:
			return strings.Contains(s.out.String(), "Press Ctrl-C to stop.")
		}
	}, 90*time.Second, 10*time.Millisecond, "warden %s neither said it was serving nor exited", args[0])
	if exited {
		cancel()
		if strings.Contains(s.out.String(), "cannot listen on") || strings.Contains(s.out.String(), "address already in use") {
			return nil, false
		}
		t.Fatalf("warden %s exited with %d before serving:\n%s", strings.Join(args, " "), code, s.out.String())
	}
	t.Cleanup(func() {
		cancel()
		require.Equal(t, 0, <-s.done, s.out.String())
	})
	return s, true
}

// runWarden runs a short warden command against the config in home.
func runWarden(t *testing.T, home string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := RunWith(t.Context(), upEnv(home, &out, &errb), append([]string{"warden"}, args...))
	require.Equal(t, 0, code, "warden %s: %s", strings.Join(args, " "), errb.String())
	return strings.TrimSpace(out.String())
}

// TestServeAlone runs the model router and the MCP gateway alone, each in
// a process of its own beside a control plane (warden up) on one Postgres
// store, and makes an agent's governed call through each.
func TestServeAlone(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	home := t.TempDir()
	provider := httptest.NewServer((&demoModels{out: io.Discard}).handler())
	t.Cleanup(provider.Close)
	docs := newDemoMCPServer(defaultDemoDocsDescription, func(string, ...any) {})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return docs }, nil))
	mcpServer := httptest.NewServer(mux)
	t.Cleanup(mcpServer.Close)

	var controlPort string
	for attempt := 1; ; attempt++ {
		controlPort = freePort(t)
		_, ok := startWarden(t, home, "up", "--store", db, "--port", controlPort, "--gateway-port", "0", "--mcp-port", "0",
			"--memory-port", "0", "--router-port", "0", "--rag-port", "0", "--trace-port", "0", "--otlp-http-port", "0", "--otlp-grpc-port", "0")
		if ok {
			break
		}
		require.Less(t, attempt, 3, "up could not bind its port three times")
	}
	manifests := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(manifests, []byte(strings.NewReplacer("PROVIDER", provider.URL, "MCPSERVER", mcpServer.URL).Replace(`apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: demo-local}
spec:
  provider: local
  model: demo-small
  endpoint: PROVIDER/v1
  capabilities: {toolUse: true, streaming: true, contextWindow: 8192}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: chat-bot}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: demo-local}
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: chat-bot-dev}
spec: {agentRef: {name: chat-bot}, environment: dev}
---
apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: docs}
spec: {url: MCPSERVER/mcp}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: docs-bot}
spec:
  framework: {adapter: openai-agents}
  modelRoute: {primary: demo-local}
  mcpServers: [{name: docs}]
---
apiVersion: warden.dev/v1alpha1
kind: Deployment
metadata: {name: docs-bot-dev}
spec: {agentRef: {name: docs-bot}, environment: dev}
`)), 0o600))
	runWarden(t, home, "apply", "-f", manifests)

	// serve starts SERVICE alone on a free port and returns its base URL.
	serve := func(t *testing.T, service, title string) string {
		for attempt := 1; ; attempt++ {
			port := freePort(t)
			s, ok := startWarden(t, home, "serve", service, "--store", db, "--listen", "127.0.0.1:"+port,
				"--public-url", "http://127.0.0.1:"+controlPort)
			if ok {
				require.Contains(t, s.out.String(), title+strings.Repeat(" ", 25-len(title))+"http://127.0.0.1:"+port)
				require.NotContains(t, s.out.String(), "First start")
				require.NotContains(t, s.out.String(), "applied migration")
				return "http://127.0.0.1:" + port
			}
			require.Less(t, attempt, 3, "serve could not bind its port three times")
		}
	}
	post := func(t *testing.T, url, authorization, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	t.Run("router", func(t *testing.T) {
		router := serve(t, "router", "model router")
		key := runWarden(t, home, "apikeys", "create", "chat-bot-key", "--agent", "chat-bot")
		token := runWarden(t, home, "token", "--agent", "chat-bot", "--audience", "warden:model-router", "--api-key", key)
		chat := `{"model":"chat-bot","messages":[{"role":"user","content":"Hello router"}],"execution":"serve-1"}`
		code, body := post(t, router+"/v1/chat/completions", "Bearer "+token, chat)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "You said: Hello router")
		code, body = post(t, router+"/v1/chat/completions", "", chat)
		require.Equal(t, http.StatusUnauthorized, code, body)
		// The lone router recorded why it routed as it did.
		var explained string
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(explained, "succeeded by demo-local") && time.Now().Before(deadline) {
			var out, errb bytes.Buffer
			RunWith(t.Context(), upEnv(home, &out, &errb), []string{"warden", "route", "explain", "chat-bot", "--execution", "serve-1", "--router", router})
			explained = out.String() + errb.String()
		}
		require.Contains(t, explained, "succeeded by demo-local", "the lone router explains its call")
	})

	t.Run("mcp", func(t *testing.T) {
		gw := serve(t, "mcp", "MCP gateway")
		runWarden(t, home, "mcp", "discover", "docs", "--mcp-server", gw)
		runWarden(t, home, "mcp", "pin", "docs", "--mcp-server", gw)
		key := runWarden(t, home, "apikeys", "create", "docs-bot-key", "--agent", "docs-bot")
		token := runWarden(t, home, "token", "--agent", "docs-bot", "--audience", "warden:mcp-gateway", "--api-key", key)
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"pin"}}}`
		code, body := post(t, gw+"/v1/mcp/docs/call", "Bearer "+token, call)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "Warden pins an MCP server")
		// The call was governed: the control plane lists its record.
		var calls string
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(calls, "docs.search_docs") && time.Now().Before(deadline) {
			var out, errb bytes.Buffer
			RunWith(t.Context(), upEnv(home, &out, &errb), []string{"warden", "get", "toolcalls", "--agent", "docs-bot"})
			calls = out.String() + errb.String()
		}
		require.Contains(t, calls, "docs.search_docs", "the lone MCP gateway's call is recorded")
	})

	t.Run("people's ID tokens", func(t *testing.T) {
		issuer := oidctest.Provider(t, "http://127.0.0.1/auth/callback", "alice@acme.example", "mallory@elsewhere.example")
		st, err := backend.Open(t.Context(), db, backend.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		_, err = tenants.New(st, nil, time.Now, slog.New(slog.DiscardHandler)).Signup(t.Context(),
			tenants.SignupRequest{TenantID: "acme", DisplayName: "Acme", OwnerEmail: "alice@acme.example"})
		require.NoError(t, err)
		var gw string
		for attempt := 1; ; attempt++ {
			port := freePort(t)
			s, ok := startWarden(t, home, "serve", "mcp", "--store", db, "--listen", "127.0.0.1:"+port,
				"--public-url", "http://127.0.0.1:"+controlPort, "--oidc-issuer", issuer, "--oidc-client-id", oidctest.ClientID)
			if ok {
				require.Contains(t, s.out.String(), "people's ID tokens       "+issuer)
				gw = "http://127.0.0.1:" + port
				break
			}
			require.Less(t, attempt, 3, "serve could not bind its port three times")
		}
		alice := oidctest.IDToken(t, issuer, "http://127.0.0.1/auth/callback", "alice@acme.example")
		code, body := post(t, gw+"/v1/mcp/discover", "Bearer "+alice, "")
		require.Equal(t, http.StatusOK, code, "a member's ID token is a bearer token of her tenant: %s", body)
		// Someone the issuer knows but no tenant has: refused.
		mallory := oidctest.IDToken(t, issuer, "http://127.0.0.1/auth/callback", "mallory@elsewhere.example")
		code, body = post(t, gw+"/v1/mcp/discover", "Bearer "+mallory, "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		// The gateway of the mcp subtest, started without the flags,
		// takes no ID token.
		plain := serve(t, "mcp", "MCP gateway")
		code, body = post(t, plain+"/v1/mcp/discover", "Bearer "+alice, "")
		require.Equal(t, http.StatusUnauthorized, code, body)
	})
}

// TestServeRefuses checks what serve refuses before serving anything: the
// embedded store, a store that is not Postgres, a schema behind the
// binary, a missing master key, an ID-token issuer without its audience.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), db, postgres.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	var last string
	require.NoError(t, conn.QueryRow(t.Context(), `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING name`).Scan(&last))
	require.NoError(t, conn.Close(t.Context()))

	withKey := t.TempDir()
	k, err := secret.GenerateMasterKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(withKey, secret.MasterKeyFileName), []byte(k), 0o600))

	cases := []struct {
		name string
		home string
		args []string
		code int
		want []string
	}{
		{"sqlite", withKey, []string{"router", "--store", "sqlite://" + filepath.Join(t.TempDir(), "warden.db")}, ExitUsage,
			[]string{"embedded SQLite store, which one process owns", "warden up"}},
		{"no store", withKey, []string{"memory"}, ExitUsage, []string{"--store is required"}},
		{"unknown service", withKey, []string{"console", "--store", db}, ExitUsage, []string{`unknown service "console"`}},
		{"schema behind", withKey, []string{"router", "--store", db, "--listen", "127.0.0.1:" + freePort(t)}, ExitFailure,
			[]string{"schema is behind", strings.TrimSuffix(last, ".up.sql"), "--migrate"}},
		{"no master key", t.TempDir(), []string{"router", "--store", db, "--listen", "127.0.0.1:" + freePort(t)}, ExitFailure,
			[]string{secret.EnvMasterKey + " is not set", "--data-dir"}},
		{"issuer without audience", withKey, []string{"mcp", "--store", db, "--oidc-issuer", "https://idp.example"}, ExitUsage,
			[]string{"--oidc-issuer and --oidc-client-id go together"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := RunWith(t.Context(), upEnv(tc.home, &out, &errb), append([]string{"warden", "serve"}, tc.args...))
			require.Equal(t, tc.code, code, errb.String())
			for _, w := range tc.want {
				require.Contains(t, errb.String(), w)
			}
			require.NotContains(t, out.String(), "Press Ctrl-C")
		})
	}
	// Nothing was migrated by the refusals.
	conn, err = pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations WHERE name = $1`, last).Scan(&n))
	require.Zero(t, n, "serve without --migrate applied %s", last)
}
