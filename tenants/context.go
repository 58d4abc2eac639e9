package tenants

import (
	"context"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
)

// LocalTenant is the single tenant of local mode.
const LocalTenant = "default"

// DefaultNamespace is created in every new tenant.
const DefaultNamespace = "default"

// FromContext returns the tenant of the request carried by ctx: the tenant of
// its authenticated principal. It fails with Unauthenticated when the
// request carries no principal or the principal names no tenant, so no code
// path can reach tenant data without one.
func FromContext(ctx context.Context) (string, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Tenant == "" {
		return "", apierr.New(apierr.CodeUnauthenticated, "the request carries no tenant: sign in or present a credential")
	}
	return p.Tenant, nil
}
