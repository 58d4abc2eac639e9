package oidc

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
)

// SignupIntent is a sign-up the console's form asked for, carried through
// the identity provider in the signed flow cookie. The owner's e-mail is
// not part of it: it is the address the provider marks email_verified.
type SignupIntent struct {
	// Tenant is the new tenant's id; DisplayName the organisation's name.
	Tenant      string `json:"t"`
	DisplayName string `json:"d,omitempty"`
	// OwnerName is the name the person gave; the provider's name claim
	// when empty.
	OwnerName string `json:"o,omitempty"`
}

// SignupFunc creates a tenant and its first owner (tenants.Service.Signup).
type SignupFunc func(ctx context.Context, req tenants.SignupRequest) (*store.TenantRecord, error)

// SignupAfter is where a completed sign-up lands: the console's home, with
// a welcome.
const SignupAfter = "/?welcome=1"

// StartSignup sends the person who posted the sign-up form to the
// identity provider (issuer names one of the deployment's issuers; empty
// picks the only one). Nothing is created here: Callback creates the tenant
// once the provider has proved the owner's e-mail address. The redirect is
// 303 because it answers a POST.
func (h *Handler) StartSignup(c *fiber.Ctx, issuer string, in SignupIntent) error {
	if h.signup == nil {
		return apierr.New(apierr.CodeNotFound, "self-service sign-up is not enabled on this deployment")
	}
	p, err := h.providerFor(c.UserContext(), issuer, "")
	if err != nil {
		return err
	}
	to, err := h.startFlow(c, p, "", &in)
	if err != nil {
		return err
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

// WithSignup lets Callback complete sign-ups with fn; without it a
// callback that carries a sign-up is refused.
func (h *Handler) WithSignup(fn SignupFunc) *Handler {
	h.signup = fn
	return h
}

// startFlow stores a new flow (state, nonce, PKCE verifier and, for a
// sign-up, its intent) in the flow cookie and returns the provider's
// authorization URL.
func (h *Handler) startFlow(c *fiber.Ctx, p provider, tenant string, in *SignupIntent) (string, error) {
	party, err := h.relyingParty(c.UserContext(), p)
	if err != nil {
		return "", err
	}
	var f flow
	if f.State, err = randomToken(); err != nil {
		return "", err
	}
	if f.Nonce, err = randomToken(); err != nil {
		return "", err
	}
	if f.Verifier, err = randomToken(); err != nil {
		return "", err
	}
	f.Issuer, f.Tenant, f.Signup, f.Expires = p.name, tenant, in, h.now().Add(h.cfg.FlowTTL).Unix()
	if err := h.setFlow(c, f); err != nil {
		return "", err
	}
	return rp.AuthURL(f.State, party, rp.WithCodeChallenge(zoidc.NewSHACodeChallenge(f.Verifier)),
		rp.AuthURLOpt(rp.WithURLParam("nonce", f.Nonce))), nil
}

// completeSignup creates the tenant of a verified sign-up with the
// provider's verified address as its owner, signs the owner in and writes
// the first records of the tenant's audit log.
func (h *Handler) completeSignup(c *fiber.Ctx, p provider, in SignupIntent, email string, claims *zoidc.IDTokenClaims) error {
	ctx := c.UserContext()
	if h.signup == nil {
		return apierr.New(apierr.CodeNotFound, "self-service sign-up is not enabled on this deployment")
	}
	if p.tenant != "" {
		return apierr.New(apierr.CodeInvalidRequest, "sign-up refused: a sign-up goes through one of the deployment's identity providers")
	}
	name := strings.TrimSpace(in.OwnerName)
	if name == "" && claims != nil {
		name = claims.Name
	}
	rec, err := h.signup(ctx, tenants.SignupRequest{TenantID: in.Tenant, DisplayName: in.DisplayName, OwnerEmail: email, OwnerName: name})
	if err != nil {
		if e, ok := apierr.As(err); ok && e.Code == apierr.CodeConflict {
			return apierr.New(apierr.CodeConflict, "sign-up refused: the tenant id %q was taken meanwhile; sign up again with another id", in.Tenant)
		}
		return err
	}
	if err := h.startSession(c, rec.ID, email); err != nil {
		return err
	}
	now := h.now().UTC()
	if err := h.st.Update(context.WithoutCancel(ctx), rec.ID, func(ctx context.Context, tx store.Tx) error {
		for _, r := range []audit.Record{
			{Verb: "signup", Resource: "tenants/" + rec.ID, Reason: "signed up; " + email + " verified by " + p.issuerURL},
			{Verb: "signin", Resource: "sessions", Reason: "signed in with " + p.issuerURL},
		} {
			r.Time, r.Tenant, r.Actor, r.Outcome, r.Policy = now, rec.ID, "user:"+email, audit.OutcomeAllowed, "oidc:"+p.name
			if _, err := tx.AuditInsert(ctx, r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		h.log.ErrorContext(ctx, "audit a sign-up", "tenant", rec.ID, "err", err)
	}
	h.log.InfoContext(ctx, "tenant signed up with a verified e-mail", "tenant", rec.ID, "issuer", p.issuerURL)
	return c.Redirect(SignupAfter, fiber.StatusFound)
}
