// Package workload is Warden's workload identity: short-lived EdDSA JWTs
// that name one agent in one namespace, environment and tenant, issued by
// POST /v1/auth/token and verified by every service through
// /.well-known/jwks.json.
//
// The files follow a token's life:
//
//   - jose.go: the strict compact-JWS reader and writer (EdDSA for our own
//     tokens; RS256/ES256 only for Kubernetes service-account tokens).
//   - issuer.go: Ed25519 signing keys kept in the store (private keys
//     sealed by the secret broker's master key), Issue and Rotate.
//   - jwks.go: the JWKS document and JWKSHandler.
//   - verify.go: Verifier, the auth.Verifier for workload tokens.
//   - remote.go: RemoteKeySource, for services that verify against another
//     process's JWKS.
//   - kubernetes.go: verification of Kubernetes service-account tokens
//     through the cluster issuer's OIDC discovery.
//   - exchange.go: TokenExchange, the POST /v1/auth/token handler.
//
// JOSE is hand-rolled on crypto/ed25519 instead of using go-jose: Warden
// only ever needs one algorithm for its own tokens, and a reader that
// accepts exactly {"alg":"EdDSA","kid","typ"} headers cannot be talked into
// alg none, HMAC-with-the-public-key or embedded-key (jwk, jku, x5u) tricks
// by construction. It is also several times faster per request.
package workload
