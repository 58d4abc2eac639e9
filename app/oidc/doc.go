// Package oidc signs people in to Warden with OpenID Connect and keeps
// their console sessions.
//
//   - Console sign-in: authorization code flow with PKCE, state and nonce
//     (Handler.Login, Handler.Callback), using zitadel/oidc's relying party
//     against one or more deployment issuers, or a tenant's own SSO
//     connection (Tenant spec.sso). The callback verifies the ID token
//     (issuer, audience, signature, expiry and issued-at with one minute of
//     clock skew, nonce), finds the person's memberships, enforces the
//     tenant's allowed e-mail domains and creates a server-side session.
//   - Sessions: a random 32-byte id in the HttpOnly cookie warden_session;
//     the store keeps only its SHA-256. SessionAuth turns the cookie into an
//     auth.Principal and re-reads the membership on every request, so a
//     removed member is out at once. CSRF protects every non-GET request
//     with the session's token (header X-CSRF-Token or form field
//     csrf_token).
//   - API bearer tokens: Verifier implements auth.Verifier for OIDC ID
//     tokens of the configured issuers, with discovery and a remote key set
//     that follows key rotation.
//   - Limiter rate-limits sign-in attempts per client IP and per e-mail.
package oidc
