package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

// defaultMemoryPort is the memory service's port.
const defaultMemoryPort = compile.DefaultMemoryPort

// memoryOptions are up's memory service flags.
type memoryOptions struct {
	// port is 0 for no memory service.
	port int
}

// bindMemory binds the memory service's listener (nil with port 0), before
// anything is set up, so that a busy port fails first.
func bindMemory(host string, port int) (net.Listener, error) {
	if port == 0 {
		return nil, nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the memory service: %w; "+
			"is another Warden (or another program) using port %d? Stop it, or choose another port with --memory-port (0: none)",
			addr, err, port)
	}
	return ln, nil
}

// serveMemory serves the memory service on ln (over TLS with tlsCfg) in
// the background, authenticating workload tokens of audience warden:memory
// and API keys, deciding with the control plane's authorizer, and
// summarizing through the model router at routerURL. stop ends it and
// waits for it. With a nil ln it serves nothing.
func serveMemory(ctx context.Context, ln net.Listener, srv *server.Server, st store.Store, routerURL string,
	tlsCfg *tls.Config, logger *slog.Logger, now func() time.Time) (stop func(), err error) {
	if ln == nil {
		return func() {}, nil
	}
	issuer := srv.Issuer()
	svc, err := memory.New(memory.Config{
		Store:          st,
		Authn:          auth.NewAuthenticator(st, now, workload.NewVerifier(issuer, workload.AudienceMemory, now)),
		Authz:          srv.Authorizer(),
		Bus:            srv.Bus(),
		ModelRouterURL: routerURL,
		RouterToken:    routerToken(issuer),
		Logger:         logger,
		Now:            now,
	})
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("memory service: %w", err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	logger.InfoContext(ctx, "memory service listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("memory service", "err", err)
		}
	}, nil
}

// routerToken gives a summary pass its credential for the model router. A
// workload's token is for the memory service only, so the router gets one
// of its own for the same agent; anyone else's Authorization header (an
// API key) is forwarded.
func routerToken(issuer *workload.Issuer) memory.RouterToken {
	return func(ctx context.Context, p auth.Principal, authorization string) (string, error) {
		if p.Kind != auth.KindAgent {
			return authorization, nil
		}
		tok, _, err := issuer.Issue(ctx, workload.IssueParams{Tenant: p.Tenant, Namespace: p.Namespace, Agent: p.Agent,
			Environment: p.Environment, Audience: workload.AudienceModelRouter})
		if err != nil {
			return "", fmt.Errorf("issue a model router token for agent %s: %w", p.Agent, err)
		}
		return "Bearer " + tok, nil
	}
}
