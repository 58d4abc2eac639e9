// Package tenants holds multi-tenancy: signup (a tenant, its owner, the
// default namespace and the environments dev, staging and prod, written all
// or nothing), tenant administration (invitations, namespaces, role
// bindings, members) and the per-request tenant context.
//
// The tenant of a request always comes from the caller's credential
// (auth.Principal.Tenant), never from a body or a path, and every store call
// names it: store.Store.View and Update take the tenant, and the Postgres
// driver turns it into `SET LOCAL warden.tenant_id` so row-level security
// enforces the boundary. Local mode runs a single tenant, "default", seeded
// by server.Bootstrap through Seed, and has no signup.
package tenants
