package oidc

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
)

// TenantChoice is the answer of a callback for a person who belongs to
// several tenants and did not name one: the console shows the list with a
// form per tenant posting tenant= and Token (in TokenField) to ChoosePath,
// which completes the sign-in. Each option's LoginURL signs in to that
// tenant from the start instead.
type TenantChoice struct {
	Email      string         `json:"email"`
	Message    string         `json:"message"`
	Tenants    []TenantOption `json:"tenants"`
	ChoosePath string         `json:"choosePath"`
	TokenField string         `json:"tokenField"`
	Token      string         `json:"token"`
}

// TenantOption is one tenant a person may sign in to.
type TenantOption struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName,omitempty"`
	LoginURL    string `json:"loginUrl"`
}

// Login starts a sign-in: GET /auth/login?issuer=NAME[&tenant=ID]. With a
// tenant whose Tenant resource carries spec.sso and no issuer (or
// issuer=sso), the tenant's own provider is used. It stores state, nonce
// and the PKCE verifier in the signed flow cookie and redirects to the
// provider. Public route; rate-limited per client IP.
func (h *Handler) Login(c *fiber.Ctx) error {
	if err := h.limit(c, "ip:"+c.IP()); err != nil {
		return err
	}
	ctx := c.UserContext()
	tenant := c.Query("tenant")
	p, err := h.providerFor(ctx, c.Query("issuer"), tenant)
	if err != nil {
		return err
	}
	to, err := h.startFlow(c, p, tenant, nil)
	if err != nil {
		return err
	}
	return c.Redirect(to, fiber.StatusFound)
}

// providerFor picks where to sign in: the named deployment issuer, the
// tenant's SSO connection, or the only configured issuer.
func (h *Handler) providerFor(ctx context.Context, issuer, tenant string) (provider, error) {
	if tenant != "" {
		if !resource.IsDNS1123Label(tenant) {
			return provider{}, apierr.New(apierr.CodeInvalidRequest, "tenant %q is not a valid tenant name", tenant)
		}
		if issuer == "" || issuer == "sso" || issuer == ssoIssuerPrefix+tenant {
			sso, err := h.tenantSSO(ctx, tenant)
			if err != nil {
				return provider{}, err
			}
			if sso != nil && sso.Issuer != "" {
				p := provider{name: ssoIssuerPrefix + tenant, issuerURL: sso.Issuer, clientID: sso.ClientID,
					scopes: []string{"openid", "email", "profile"}, tenant: tenant}
				// A tenant connection to a client the deployment also
				// configures uses its secret; otherwise it is a public
				// client and PKCE alone protects the code.
				for _, is := range h.cfg.Issuers {
					if is.IssuerURL == p.issuerURL && is.ClientID == p.clientID {
						p.clientSecret, p.scopes = is.ClientSecret, is.Scopes
					}
				}
				return p, nil
			}
			if issuer != "" {
				return provider{}, apierr.New(apierr.CodeNotFound, "tenant %q has no SSO connection", tenant)
			}
		}
	}
	if issuer == "" && len(h.cfg.Issuers) == 1 {
		issuer = h.cfg.Issuers[0].Name
	}
	if issuer == "" {
		return provider{}, apierr.New(apierr.CodeInvalidRequest, "choose an identity provider: /auth/login?issuer=NAME with NAME one of %s", h.issuerNames())
	}
	p, ok := h.issuerByName(issuer)
	if !ok {
		return provider{}, apierr.New(apierr.CodeInvalidRequest, "unknown identity provider %q: use one of %s", issuer, h.issuerNames())
	}
	return p, nil
}

// tenantSSO reads a tenant's SSO connection; nil when it has none or does
// not exist (so that sign-in does not reveal which tenants exist).
func (h *Handler) tenantSSO(ctx context.Context, tenant string) (*tenants.SSOConnection, error) {
	var sso *tenants.SSOConnection
	err := h.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		sso, err = tenants.TenantSSO(ctx, r, tenant)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read sso of tenant %q: %w", tenant, err)
	}
	return sso, nil
}

// Callback completes a sign-in: GET /auth/callback?code=…&state=…. It
// checks state against the flow cookie, exchanges the code (PKCE), verifies
// the ID token (issuer, audience, signature, expiry and issued-at with the
// configured skew, nonce), picks the tenant, enforces the tenant's allowed
// e-mail domains, marks the member active, creates the session and
// redirects to AfterLogin. Public route; rate-limited per client IP and per
// e-mail.
func (h *Handler) Callback(c *fiber.Ctx) (err error) {
	if err := h.limit(c, "ip:"+c.IP()); err != nil {
		return err
	}
	ctx := c.UserContext()
	f, err := h.readFlow(c)
	h.clearFlow(c)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "sign-in refused: %v; start again at /auth/login", err)
	}
	// A failed callback is audited in the tenant it was for, once one is
	// known (asked for at /auth/login, or the tenant's own provider), and
	// only when that tenant exists: anonymous requests write nowhere else.
	var tenant, email, via string
	defer func() {
		if err != nil && tenant != "" {
			h.auditFailedSignin(ctx, tenant, email, via, err)
		}
	}()
	tenant, via = f.Tenant, f.Issuer
	if subtle.ConstantTimeCompare([]byte(c.Query("state")), []byte(f.State)) != 1 {
		return apierr.New(apierr.CodeInvalidRequest, "sign-in refused: the state does not match this browser's sign-in; start again at /auth/login")
	}
	if e := c.Query("error"); e != "" {
		return unauthenticated("the identity provider refused the sign-in: %s %s", e, c.Query("error_description"))
	}
	var p provider
	if t, ok := strings.CutPrefix(f.Issuer, ssoIssuerPrefix); ok {
		p, err = h.providerFor(ctx, "sso", t)
	} else {
		p, err = h.providerFor(ctx, f.Issuer, "")
	}
	if err != nil {
		return err
	}
	party, err := h.relyingParty(ctx, p)
	if err != nil {
		return err
	}
	tokens, err := rp.CodeExchange[*zoidc.IDTokenClaims](context.WithValue(ctx, nonceKey{}, f.Nonce), c.Query("code"), party,
		rp.WithCodeVerifier(f.Verifier))
	if err != nil {
		h.log.InfoContext(ctx, "sign-in code exchange refused", "issuer", p.issuerURL, "err", err)
		return unauthenticated("sign-in refused: the identity provider's answer did not verify (%v)", err)
	}
	claims := tokens.IDTokenClaims
	if err := h.checkTimes(claims); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(claims.Nonce), []byte(f.Nonce)) != 1 {
		return unauthenticated("sign-in refused: the ID token's nonce does not match this sign-in")
	}
	email, verified := claims.Email, bool(claims.EmailVerified)
	if email == "" && tokens.AccessToken != "" {
		info, err := rp.Userinfo[*zoidc.UserInfo](ctx, tokens.AccessToken, tokens.TokenType, claims.Subject, party)
		if err != nil {
			return unauthenticated("sign-in refused: the identity provider gave no e-mail (%v)", err)
		}
		email, verified = info.Email, bool(info.EmailVerified)
	}
	email, err = tenants.NormalizeEmail(email)
	if err != nil {
		email = ""
		return unauthenticated("sign-in refused: the identity provider gave no usable e-mail address")
	}
	if !verified && f.Signup != nil {
		return apierr.New(apierr.CodeForbidden, "sign-up refused: the identity provider has not verified %s; verify it there and sign up again", email)
	}
	if !verified {
		return apierr.New(apierr.CodeForbidden, "sign-in refused: %s is not verified at the identity provider", email)
	}
	if err := h.limit(c, "email:"+email); err != nil {
		return err
	}
	if f.Signup != nil {
		return h.completeSignup(c, p, *f.Signup, email, claims)
	}

	if p.tenant != "" {
		tenant = p.tenant
	}
	picked, choice, err := h.pickTenant(ctx, p, f.Tenant, email)
	if err != nil {
		return err
	}
	if picked != "" {
		tenant = picked
	}
	if choice != nil {
		return h.offerChoice(c, p, *choice)
	}
	if err := h.admit(ctx, p, tenant, email, claims.Claims); err != nil {
		return err
	}
	if err := h.startSession(c, tenant, email); err != nil {
		return err
	}
	h.log.InfoContext(ctx, "signed in", "tenant", tenant, "issuer", p.issuerURL)
	// A sign-in is on the tenant's audit log, like every use of a key.
	h.auditSignin(ctx, audit.Record{Tenant: tenant, Actor: "user:" + email, Outcome: audit.OutcomeAllowed, Policy: "oidc:" + p.name,
		Reason: "signed in with " + p.issuerURL})
	return c.Redirect(h.cfg.AfterLogin, fiber.StatusFound)
}

// checkTimes checks expiry and issued-at against the injected clock with
// the configured skew.
func (h *Handler) checkTimes(claims zoidc.Claims) error {
	now := h.now()
	if exp := claims.GetExpiration(); exp.IsZero() || !now.Add(-h.cfg.ClockSkew).Before(exp) {
		return unauthenticated("the ID token has expired")
	}
	if iat := claims.GetIssuedAt(); iat.IsZero() || iat.After(now.Add(h.cfg.ClockSkew)) {
		return unauthenticated("the ID token's issued-at is missing or in the future")
	}
	return nil
}

// pickTenant chooses the tenant of a sign-in: the SSO connection's tenant,
// else the requested one, else the only one; with several it returns the
// choice instead.
func (h *Handler) pickTenant(ctx context.Context, p provider, requested, email string) (string, *TenantChoice, error) {
	ms, err := h.st.MembershipsByEmail(ctx, email)
	if err != nil {
		return "", nil, fmt.Errorf("look up memberships: %w", err)
	}
	if len(ms) == 0 {
		return "", nil, apierr.New(apierr.CodeForbidden, "%s is not a member of any tenant: ask a tenant owner to invite you, or sign up", email)
	}
	if p.tenant != "" {
		requested = p.tenant
	}
	if requested != "" {
		for _, m := range ms {
			if m.Tenant == requested {
				return requested, nil, nil
			}
		}
		return "", nil, apierr.New(apierr.CodeForbidden, "%s is not a member of tenant %q: ask its owner to invite you", email, requested)
	}
	if len(ms) == 1 {
		return ms[0].Tenant, nil, nil
	}
	choice := &TenantChoice{Email: email, Message: "You belong to several tenants: choose one."}
	for _, m := range ms {
		opt := TenantOption{ID: m.Tenant, LoginURL: "/auth/login?" + url.Values{"issuer": {p.name}, "tenant": {m.Tenant}}.Encode()}
		if rec, err := h.st.TenantGet(ctx, m.Tenant); err == nil {
			opt.DisplayName = rec.DisplayName
		}
		choice.Tenants = append(choice.Tenants, opt)
	}
	return "", choice, nil
}

// admit applies the tenant's SSO rules and records the sign-in: allowed
// e-mail domains (whichever issuer signed the person in), the role mapping
// of the tenant's own provider, member status active and last login.
func (h *Handler) admit(ctx context.Context, p provider, tenant, email string, claims map[string]any) error {
	now := h.now().UTC()
	err := h.st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		sso, err := tenants.TenantSSO(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if !sso.DomainAllowed(email) {
			_, domain, _ := strings.Cut(email, "@")
			return apierr.New(apierr.CodeForbidden, "sign-in refused: tenant %q allows only e-mail addresses of %s, not %s",
				tenant, strings.Join(sso.AllowedDomains, ", "), domain)
		}
		m, err := tx.MemberGet(ctx, email)
		if err != nil {
			if isNotFound(err) {
				return apierr.New(apierr.CodeForbidden, "%s is not a member of tenant %q", email, tenant)
			}
			return err
		}
		m.Status, m.LastLogin = store.MemberActive, &now
		if err := tx.MemberUpsert(ctx, *m); err != nil {
			return fmt.Errorf("record sign-in: %w", err)
		}
		if p.tenant != "" && sso != nil && sso.RoleClaim != "" {
			return tenants.SyncSSORole(ctx, tx, tenant, email, sso.MapRole(claims), now)
		}
		return nil
	})
	return err
}
