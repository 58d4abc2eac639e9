package oidc

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
)

// ChoiceCookie carries a verified sign-in that still needs a tenant, from
// the callback that found several to POST /auth/choose. It is signed,
// HttpOnly, scoped to /auth, lives FlowTTL and is cleared by the choice.
const ChoiceCookie = "warden_oidc_choice"

// ChoiceField is the form field carrying the choice cookie's token on the
// choose-a-tenant page's forms (a double submit bound to the signed
// cookie); the console's own CSRF field may travel next to it.
const ChoiceField = "choice_token"

// choosing is the content of the choice cookie: who signed in, through
// which provider, and the token the page's forms must echo.
type choosing struct {
	Email   string `json:"m"`
	Issuer  string `json:"i"`
	Token   string `json:"k"`
	Expires int64  `json:"e"`
}

func (h *Handler) signChoice(payload string) string {
	return h.sign("choice\x00" + payload)
}

func (h *Handler) setChoice(c *fiber.Ctx, ch choosing) error {
	return h.setSigned(c, ChoiceCookie, h.signChoice, ch, ch.Expires)
}

func (h *Handler) clearChoice(c *fiber.Ctx) { h.clearSigned(c, ChoiceCookie) }

var errNoChoice = errors.New("no tenant choice in progress")

func (h *Handler) readChoice(c *fiber.Ctx) (choosing, error) {
	var ch choosing
	if !readSigned(c, ChoiceCookie, h.signChoice, &ch) || ch.Email == "" || ch.Token == "" {
		return choosing{}, errNoChoice
	}
	if !h.now().Before(time.Unix(ch.Expires, 0)) {
		return choosing{}, errors.New("the choice took too long")
	}
	return ch, nil
}

// offerChoice stores the verified sign-in in the choice cookie and hands
// the choice to RenderChoice.
func (h *Handler) offerChoice(c *fiber.Ctx, p provider, choice TenantChoice) error {
	token, err := randomToken()
	if err != nil {
		return err
	}
	ch := choosing{Email: choice.Email, Issuer: p.name, Token: token, Expires: h.now().Add(h.cfg.FlowTTL).Unix()}
	if err := h.setChoice(c, ch); err != nil {
		return err
	}
	choice.ChoosePath, choice.TokenField, choice.Token = ChoosePath, ChoiceField, token
	return h.RenderChoice(c, choice)
}

// ChoosePath is where the choose-a-tenant page's forms post.
const ChoosePath = "/auth/choose"

// Choose completes a sign-in that needed a tenant: POST /auth/choose with
// tenant= and choice_token=. It checks the choice cookie and its token,
// admits the person to the chosen tenant as the callback would (membership,
// allowed e-mail domains), starts the session, audits the sign-in in that
// tenant and redirects (303) to AfterLogin. Public route; rate-limited per
// client IP.
func (h *Handler) Choose(c *fiber.Ctx) (err error) {
	if err := h.limit(c, "ip:"+c.IP()); err != nil {
		return err
	}
	ctx := c.UserContext()
	ch, err := h.readChoice(c)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "sign-in refused: %v; start again at /auth/login", err)
	}
	if subtle.ConstantTimeCompare([]byte(formValue(c, ChoiceField)), []byte(ch.Token)) != 1 {
		return apierr.New(apierr.CodeForbidden, "missing or wrong form token: reload the page and try again")
	}
	tenant := strings.Clone(formValue(c, "tenant"))
	if !resource.IsDNS1123Label(tenant) {
		return apierr.New(apierr.CodeInvalidRequest, "tenant %q is not a valid tenant name", tenant)
	}
	p := provider{name: ch.Issuer}
	if is, ok := h.issuerByName(ch.Issuer); ok {
		p = is
	}
	defer func() {
		if err != nil {
			h.auditFailedSignin(ctx, tenant, ch.Email, ch.Issuer, err)
		}
	}()
	if err := h.admit(ctx, p, tenant, ch.Email, nil); err != nil {
		return err
	}
	h.clearChoice(c)
	if err := h.startSession(c, tenant, ch.Email); err != nil {
		return err
	}
	h.log.InfoContext(ctx, "signed in", "tenant", tenant, "issuer", p.issuerURL)
	h.auditSignin(ctx, audit.Record{Tenant: tenant, Actor: "user:" + ch.Email, Outcome: audit.OutcomeAllowed, Policy: "oidc:" + p.name,
		Reason: "signed in with " + p.issuerURL + ", tenant chosen"})
	return c.Redirect(h.cfg.AfterLogin, fiber.StatusSeeOther)
}

// Switch moves the session to another tenant of the same person: POST
// /auth/switch with tenant= and the session's CSRF token. The person must
// be a member of that tenant and pass its allowed e-mail domains; a
// refusal is 403 and changes nothing. The old session is replaced by a new
// one (new id, new CSRF token) in the chosen tenant, the switch is audited
// there (verb switch, resource sessions), and the answer redirects (303)
// to "/".
func (h *Handler) Switch(c *fiber.Ctx) error {
	s, err := h.session(c)
	if err != nil {
		return err
	}
	if err := checkCSRF(c, s); err != nil {
		return err
	}
	ctx := c.UserContext()
	tenant := strings.Clone(formValue(c, "tenant"))
	if !resource.IsDNS1123Label(tenant) {
		return apierr.New(apierr.CodeInvalidRequest, "tenant %q is not a valid tenant name", tenant)
	}
	if tenant == s.Tenant {
		return c.Redirect("/", fiber.StatusSeeOther)
	}
	if err := h.admit(ctx, provider{}, tenant, s.Email, nil); err != nil {
		return err
	}
	if err := h.st.SessionDelete(ctx, s.IDHash); err != nil {
		return err
	}
	if err := h.startSession(c, tenant, s.Email); err != nil {
		return err
	}
	h.auditSwitch(ctx, audit.Record{Tenant: tenant, Actor: "user:" + s.Email, Outcome: audit.OutcomeAllowed,
		Reason: "switched from tenant " + s.Tenant})
	return c.Redirect("/", fiber.StatusSeeOther)
}

// auditSwitch writes a switch record (verb switch, resource sessions) in
// rec.Tenant; a failure to write is logged, never shown to the person.
func (h *Handler) auditSwitch(ctx context.Context, rec audit.Record) {
	h.auditSession(ctx, "switch", rec)
}
