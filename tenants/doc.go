// Package tenants will hold multi-tenancy: signup, the tenant boundary and
// the per-request tenant context that the Postgres driver turns into
// `SET LOCAL warden.tenant_id` for row-level security.
//
// Nothing lives here yet; local mode runs a single tenant, "default",
// created by `warden up`.
package tenants
