// Package auth authenticates callers and decides what their role lets them
// do. Today it verifies Warden API keys (`wk_…`, stored hashed) and maps the
// four namespace roles and the tenant owner onto API verbs; OIDC bearer
// tokens, workload identities and Casbin role bindings build on the same
// Principal.
package auth
