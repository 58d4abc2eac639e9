package cli

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

// TestMemoryCommands runs warden memory against a control plane and the
// memory service as up wires them (serveMemory).
func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	admin, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	srv, err := server.New(server.Config{Store: st, Logger: logger, GatewayAddr: server.GatewayOff})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mln, err := bindMemory("127.0.0.1", 0)
	require.NoError(t, err)
	require.Nil(t, mln, "port 0 binds nothing")
	mln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	stopMemory, err := serveMemory(sctx, mln, srv, st, "http://127.0.0.1:1", nil, logger, time.Now)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		stopMemory()
		<-done
		_ = st.Close()
	})
	s := &stack{t: t, srv: srv, cpURL: "http://" + ln.Addr().String(), admin: admin, home: t.TempDir()}
	cfg := clientconfig.New()
	cfg.SetContext(clientconfig.Context{Name: "local", Server: s.cpURL, Token: admin, Namespace: "default"})
	require.NoError(t, cfg.UseContext("local"))
	require.NoError(t, clientconfig.Save(s.home, cfg))
	path := filepath.Join(t.TempDir(), "mem.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: warden.dev/v1alpha1
kind: Memory
metadata: {name: notes}
spec: {scope: namespace, summarize: {keepRecent: 0}}
`), 0o644))
	res := s.run(t, nil, "apply", "-f", path)
	require.Equal(t, ExitOK, res.code, res.stderr)

	env := map[string]string{envMemoryURL: "http://" + mln.Addr().String()}
	res = s.run(t, env, "memory", "write", "notes", "Refunds take 30 days; mail jane@example.com", "--metadata", `{"topic":"billing"}`)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "(1 findings redacted)")
	id := regexp.MustCompile(`item (mi-[0-9a-f]+)`).FindStringSubmatch(res.stdout)
	require.Len(t, id, 2, res.stdout)
	res = s.run(t, env, "memory", "write", "notes", "Shipping is free above 50 euros")
	require.Equal(t, ExitOK, res.code, res.stderr)

	steps := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"query ranked", []string{"memory", "query", "notes", "refunds"}, ExitOK, []string{"ID", "SCORE", "Refunds take 30 days", "[REDACTED:EMAIL]"}},
		{"query json", []string{"memory", "query", "notes", "--metadata", `{"topic":"billing"}`, "-o", "json"}, ExitOK, []string{`"count": 1`}},
		{"bad metadata", []string{"memory", "query", "notes", "--metadata", "nope"}, ExitUsage, nil},
		{"unknown memory", []string{"memory", "query", "nothing"}, ExitNotFound, nil},
		{"summarize", []string{"memory", "summarize", "notes"}, ExitOK, []string{"2 items of memory notes summarized (extractive, policy mark)"}},
		{"rm", []string{"memory", "rm", "notes", id[1]}, ExitOK, []string{"deleted"}},
		{"rm again", []string{"memory", "rm", "notes", id[1]}, ExitNotFound, nil},
		{"no text", []string{"memory", "write", "notes"}, ExitUsage, nil},
	}
	for _, stp := range steps {
		r := s.run(t, env, stp.args...)
		require.Equal(t, stp.wantCode, r.code, "%s: %s %s", stp.name, r.stdout, r.stderr)
		for _, w := range stp.wantOut {
			require.Contains(t, r.stdout, w, stp.name)
		}
	}
}

// TestRouterToken checks the model router credential of summary passes: a
// workload gets a token of audience warden:model-router for the same agent,
// anyone else's header is forwarded.
func TestRouterToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), GatewayAddr: server.GatewayOff})
	require.NoError(t, err)
	fn := routerToken(srv.Issuer())

	got, err := fn(ctx, auth.Principal{Kind: auth.KindAPIKey, Tenant: "default"}, "Bearer wk_key")
	require.NoError(t, err)
	require.Equal(t, "Bearer wk_key", got)

	agent := auth.Principal{Kind: auth.KindAgent, Tenant: "default", Namespace: "default", Agent: "bot", Environment: "dev"}
	got, err = fn(ctx, agent, "Bearer memory-token")
	require.NoError(t, err)
	tok, ok := strings.CutPrefix(got, "Bearer ")
	require.True(t, ok, got)
	p, err := workload.NewVerifier(srv.Issuer(), workload.AudienceModelRouter, time.Now).Verify(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, "bot", p.Agent)
	require.Equal(t, "default", p.Namespace)
	_, err = workload.NewVerifier(srv.Issuer(), workload.AudienceMemory, time.Now).Verify(ctx, tok)
	require.Error(t, err, "the router's token is not a memory token")
}
