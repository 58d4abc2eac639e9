package auth

import "context"

// HeaderTenant names the tenant a request acts in, for a person who
// belongs to several. A credential bound to another tenant is refused
// with 403 Forbidden rather than served in its own.
const HeaderTenant = "X-Warden-Tenant"

type requestedTenantKey struct{}

// WithRequestedTenant returns ctx naming the tenant a request asks for
// (HeaderTenant); "" names none.
func WithRequestedTenant(ctx context.Context, tenant string) context.Context {
	if tenant == "" {
		return ctx
	}
	return context.WithValue(ctx, requestedTenantKey{}, tenant)
}

// RequestedTenant returns the tenant ctx asks for, "" when none.
func RequestedTenant(ctx context.Context) string {
	t, _ := ctx.Value(requestedTenantKey{}).(string)
	return t
}
