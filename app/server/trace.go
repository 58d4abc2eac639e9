package server

import (
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/workload"
)

// Authenticator returns an authenticator for a data-plane service: API
// keys, workload tokens issued by this control plane for audience, and,
// when people sign in, their ID tokens.
func (s *Server) Authenticator(audience string) *auth.Authenticator {
	verifiers := []auth.Verifier{workload.NewVerifier(s.issuer, audience, s.cfg.Now)}
	if s.oidc != nil {
		verifiers = append(verifiers, s.oidc.Verifier())
	}
	return auth.NewAuthenticator(s.store, s.cfg.Now, verifiers...)
}

// Authorizer returns the control plane's authorizer, shared by the
// data-plane services so that grants mean the same everywhere.
func (s *Server) Authorizer() *authz.Authorizer { return s.authz }
