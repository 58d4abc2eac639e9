package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/mcp"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/workload"
)

// newMCP builds the MCP gateway: workload tokens for warden:mcp-gateway,
// API keys and people authenticate; pins go through the apply pipeline.
func (s *Server) newMCP(issuer *workload.Issuer, people *oidc.Handler, bus *events.Bus) error {
	verifiers := []auth.Verifier{workload.NewVerifier(issuer, workload.AudienceMCPGateway, s.cfg.Now)}
	if people != nil {
		verifiers = append(verifiers, people.Verifier())
	}
	every := time.Duration(0) // the service's own ticker
	if s.cfg.Cluster != nil {
		every = -1 // the cluster's discover-mcp job (DiscoverMCP)
	}
	svc, err := mcp.New(mcp.Config{
		DiscoverEvery: every,
		Store:         s.cfg.Store, Authn: auth.NewAuthenticator(s.cfg.Store, s.cfg.Now, verifiers...), Authz: s.authz,
		Applier: s.pipeline, Bus: bus, Logger: s.cfg.Logger, Now: s.cfg.Now, Timeouts: s.cfg.Timeouts,
		Sandbox: s.cfg.StdioSandbox, Secrets: secret.NewBroker(s.cfg.Keyring),
	})
	if err != nil {
		return fmt.Errorf("MCP gateway: %w", err)
	}
	s.mcp = svc
	return nil
}

// DiscoverMCP discovers every MCPServer of every tenant: the
// once-per-cluster discover-mcp job's work, on a replica with an MCP
// gateway (elsewhere it does nothing).
func (s *Server) DiscoverMCP(ctx context.Context) error {
	if s.mcp == nil {
		return nil
	}
	return s.mcp.DiscoverAll(ctx)
}

// MCP returns the MCP gateway, nil when it is off.
func (s *Server) MCP() *mcp.Service { return s.mcp }

// ServiceMCP names the MCP gateway in a BindError.
const ServiceMCP = "MCP gateway"

// BindMCP binds the MCP gateway's listener on addr. A failure is a
// *BindError.
func (ls *Listeners) BindMCP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &BindError{Service: ServiceMCP, Addr: addr, Err: err}
	}
	ls.MCP = ln
	return nil
}

// useMCPListener makes ln (over TLS when configured) the MCP gateway's
// listener; without an MCP gateway it is closed.
func (s *Server) useMCPListener(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) {
	if ln == nil {
		return
	}
	if s.mcp == nil {
		_ = ln.Close()
		return
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.log.InfoContext(ctx, "MCP gateway listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	s.mcpLn = ln
}

// serveMCP serves the MCP gateway on its listener, when there is one, and
// cancels the others when it fails.
func (s *Server) serveMCP(ctx context.Context, cancel context.CancelFunc) <-chan error {
	errc := make(chan error, 1)
	if s.mcp == nil || s.mcpLn == nil {
		errc <- nil
		return errc
	}
	go func() {
		errc <- s.mcp.Serve(ctx, s.mcpLn)
		cancel()
	}()
	return errc
}
