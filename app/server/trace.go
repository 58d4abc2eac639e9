package server

import (
	"context"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/trace"
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

// consoleTraces reads the trace store for the console's trace screens: the
// spans live in the store's database, so the control plane reads them
// directly, authorized like GET /v1/traces.
type consoleTraces struct{ s *Server }

func (a consoleTraces) Overview(ctx context.Context, p auth.Principal, namespace string, window time.Duration) ([]trace.OverviewRow, error) {
	if err := a.s.checkPrincipal(ctx, p, auth.VerbList, namespace, authz.ObjTraces); err != nil {
		return nil, err
	}
	return trace.Overview(ctx, a.s.store, p.Tenant, []string{namespace}, window, a.s.now())
}

func (a consoleTraces) Trace(ctx context.Context, p auth.Principal, namespace string, id [16]byte) (*trace.Trace, error) {
	if err := a.s.checkPrincipal(ctx, p, auth.VerbGet, namespace, authz.ObjTraces); err != nil {
		return nil, err
	}
	return trace.ReadTrace(ctx, a.s.store, p.Tenant, []string{namespace}, id)
}
