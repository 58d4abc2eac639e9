// Package authz decides what an authenticated Principal may do, with Casbin
// (RBAC with domains: a domain is a namespace, "*" the whole tenant).
//
// The role → permission matrix is fixed in code (matrix.go) and documented
// in docs/authz.md; who holds which role comes from Warden's own store:
// RoleBinding resources (domain = the binding's namespace), tenant owners
// (Tenant spec.owner plus the members the integrator passes to SetOwners),
// and the role and namespace an API key or workload credential carries
// itself. A small read-only Casbin adapter (adapter.go) turns those into
// policy lines; there is no policy file and no ORM.
//
// It is the only place Warden decides authorization: the control plane,
// apply, tenants, the console and the gateway ask it, and none keeps a
// rank or role list of its own (role lists are here: Roles,
// BindableRoles, NamespaceRoles). Each allowed decision names the grant
// that matched (a RoleBinding, ownership, a credential's own scope), which
// Authorize adds to the request's Trail for the audit record's effective
// policy (trail.go). AuthorizeDecision adds separation of duties to
// approvals: the requester of a call never decides it (requester.go).
//
// One Enforcer is built per tenant on first use and cached until
// Invalidate(tenant) (called on every RoleBinding or Tenant change) or a
// 30-second TTL; decisions are memoized per cache generation, so a repeated
// decision costs a map lookup.
package authz
