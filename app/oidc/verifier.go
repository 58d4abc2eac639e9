package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/tenants"
)

// Verifier verifies people's OIDC ID tokens presented to the API as
// Authorization: Bearer <id token>. It implements auth.Verifier.
type Verifier struct{ h *Handler }

var _ auth.Verifier = (*Verifier)(nil)

// Verifier returns the bearer ID token verifier of h's deployment issuers.
func (h *Handler) Verifier() *Verifier { return &Verifier{h: h} }

// unverifiedIssuer returns the iss claim of a JWS compact token without
// verifying anything.
func unverifiedIssuer(token string) (string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(b, &c) != nil {
		return "", false
	}
	return c.Iss, c.Iss != ""
}

// Accepts reports whether token is a JWT whose iss is a configured
// deployment issuer. It verifies nothing.
func (v *Verifier) Accepts(token string) bool {
	iss, ok := unverifiedIssuer(token)
	if !ok {
		return false
	}
	_, ok = v.issuer(iss)
	return ok
}

func (v *Verifier) issuer(iss string) (provider, bool) {
	iss = strings.TrimSuffix(iss, "/")
	for _, is := range v.h.cfg.Issuers {
		if is.IssuerURL == iss {
			return v.h.issuerByName(is.Name)
		}
	}
	return provider{}, false
}

// WithRequestedTenant returns ctx naming the tenant a bearer request asks
// for (the API's X-Warden-Tenant header, auth.WithRequestedTenant). Verify
// needs it for a person who belongs to several tenants, and refuses one who
// does not belong to it with 403 Forbidden.
func WithRequestedTenant(ctx context.Context, tenant string) context.Context {
	return auth.WithRequestedTenant(ctx, tenant)
}

// Verify checks an ID token: signature against the issuer's keys (found by
// discovery; an unknown key id refetches them, which follows key rotation),
// issuer, audience (the issuer's client id), authorized party, expiry and
// issued-at with the configured clock skew, a verified e-mail, and a
// membership. Errors wrap auth.ErrUnauthenticated.
func (v *Verifier) Verify(ctx context.Context, token string) (auth.Principal, error) {
	fail := func(format string, args ...any) (auth.Principal, error) {
		return auth.Principal{}, fmt.Errorf("%w: id token: %s", auth.ErrUnauthenticated, fmt.Sprintf(format, args...))
	}
	iss, _ := unverifiedIssuer(token)
	p, ok := v.issuer(iss)
	if !ok {
		return fail("issuer %q is not configured", iss)
	}
	party, err := v.h.relyingParty(ctx, p)
	if err != nil {
		return auth.Principal{}, err
	}
	var claims zoidc.IDTokenClaims
	payload, err := zoidc.ParseToken(token, &claims)
	if err != nil {
		return fail("%v", err)
	}
	for _, check := range []func() error{
		func() error { return zoidc.CheckSubject(&claims) },
		func() error { return zoidc.CheckIssuerWithISSVerifier(&claims, p.issuerURL, nil) },
		func() error { return zoidc.CheckAudience(&claims, p.clientID) },
		func() error { return zoidc.CheckAuthorizedParty(&claims, p.clientID) },
		func() error {
			return zoidc.CheckSignature(ctx, token, payload, &claims, nil, party.IDTokenVerifier().KeySet)
		},
	} {
		if err := check(); err != nil {
			return fail("%v", err)
		}
	}
	if err := v.h.checkTimes(&claims); err != nil {
		return fail("%s", err.(*apierr.Error).Message)
	}
	email, err := tenants.NormalizeEmail(claims.Email)
	if err != nil {
		return fail("no usable email claim (configure the issuer to put email in ID tokens)")
	}
	if !bool(claims.EmailVerified) {
		return fail("%s is not verified at the identity provider", email)
	}
	ms, err := v.h.st.MembershipsByEmail(ctx, email)
	if err != nil {
		return auth.Principal{}, fmt.Errorf("look up memberships: %w", err)
	}
	want := auth.RequestedTenant(ctx)
	tenant := ""
	for _, m := range ms {
		if want == "" || m.Tenant == want {
			if tenant != "" {
				return fail("%s belongs to several tenants: name one with the X-Warden-Tenant header", email)
			}
			tenant = m.Tenant
		}
	}
	if tenant == "" && want != "" && len(ms) > 0 {
		// A valid token of a person who asks for a tenant they do not
		// belong to: who they are is known, what they ask is refused.
		return auth.Principal{}, apierr.New(apierr.CodeForbidden, "%s is not a member of tenant %q", email, want)
	}
	if tenant == "" {
		return fail("%s is not a member of %s", email, map[bool]string{true: "any tenant", false: fmt.Sprintf("tenant %q", want)}[want == ""])
	}
	if err := v.h.domainAllowed(ctx, tenant, email); err != nil {
		return fail("%v", err)
	}
	pr, err := v.h.principalFor(ctx, tenant, email)
	if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		return auth.Principal{}, err
	}
	return pr, err
}

// domainAllowed enforces the tenant's SSO allowed domains for bearer tokens.
func (h *Handler) domainAllowed(ctx context.Context, tenant, email string) error {
	sso, err := h.tenantSSO(ctx, tenant)
	if err != nil {
		return err
	}
	if !sso.DomainAllowed(email) {
		return fmt.Errorf("tenant %q does not allow e-mail addresses of this domain", tenant)
	}
	return nil
}
