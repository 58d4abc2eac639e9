package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/mcp"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/workload"
)

// newMCP builds the MCP gateway: workload tokens for warden:mcp-gateway,
// API keys and people authenticate; pins go through the apply pipeline.
func (s *Server) newMCP(issuer *workload.Issuer, people *oidc.Handler, bus *events.Bus) error {
	verifiers := []auth.Verifier{workload.NewVerifier(issuer, workload.AudienceMCPGateway, s.cfg.Now)}
	if people != nil {
		verifiers = append(verifiers, people.Verifier())
	}
	svc, err := mcp.New(mcp.Config{
		Store: s.cfg.Store, Authn: auth.NewAuthenticator(s.cfg.Store, s.cfg.Now, verifiers...), Authz: s.authz,
		Applier: s.pipeline, Bus: bus, Logger: s.cfg.Logger, Now: s.cfg.Now,
	})
	if err != nil {
		return fmt.Errorf("MCP gateway: %w", err)
	}
	s.mcp = svc
	return nil
}

// MCP returns the MCP gateway, nil when it is off.
func (s *Server) MCP() *mcp.Service { return s.mcp }

// listenMCP opens the MCP gateway's listener.
func (s *Server) listenMCP(ctx context.Context, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", s.cfg.MCPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.MCPAddr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.log.InfoContext(ctx, "MCP gateway listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	s.mcpLn = ln
	return nil
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
