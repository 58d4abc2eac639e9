package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/router"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/workload"
)

// newRouter builds the model router: workload tokens of audience
// warden:model-router, API keys and people authenticate on its port.
func newRouter(cfg Config, issuer *workload.Issuer, people *oidc.Handler, policies *policy.Engine, az *authz.Authorizer, bus *events.Bus) (*router.Router, error) {
	verifiers := []auth.Verifier{workload.NewVerifier(issuer, workload.AudienceModelRouter, cfg.Now)}
	if people != nil {
		verifiers = append(verifiers, people.Verifier())
	}
	rt, err := router.New(router.Config{
		Store: cfg.Store, Policies: policies, Authn: auth.NewAuthenticator(cfg.Store, cfg.Now, verifiers...), Authz: az,
		Secrets: secret.NewBroker(cfg.Keyring), Bus: bus, Tracer: cfg.Tracer, Logger: cfg.Logger, Now: cfg.Now, Timeouts: cfg.Timeouts,
	})
	if err != nil {
		return nil, fmt.Errorf("model router: %w", err)
	}
	return rt, nil
}

// Router returns the model router, nil when it is off.
func (s *Server) Router() *router.Router { return s.router }

// serveRouter serves the model router on ln until ctx ends or the
// returned stop is called; stop waits for its requests to finish and its
// records to be written.
func (s *Server) serveRouter(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) (stop func()) {
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.log.InfoContext(ctx, "model router listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.router.Serve(ctx, ln); err != nil {
			s.log.Error("model router", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		s.router.Close()
	}
}
