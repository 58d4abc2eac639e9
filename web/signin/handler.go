// Package signin is the console's sign-in screen: one button per configured
// OIDC issuer and, when a tenant is named, the tenant's own SSO. The
// buttons start the OIDC code flow at LoginPath, which app/oidc serves.
package signin

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/web/layout"
)

// Issuer is a sign-in option: ID is what LoginPath takes as ?issuer=, Name
// is shown on the button ("Google", "Acme Okta").
type Issuer struct {
	ID   string
	Name string
}

// TenantSSO finds a tenant's own identity providers (none is not an error).
type TenantSSO interface {
	TenantIssuers(ctx context.Context, tenant string) ([]Issuer, error)
}

// Messages for the error codes the OIDC callback may send back in ?error=.
// Anything else gets the generic one, so the page never echoes input.
var Messages = map[string]string{
	"access_denied":  "Sign-in was cancelled at your identity provider.",
	"not_member":     "That account is not a member of this tenant. Ask an owner to invite you.",
	"expired":        "Your session expired. Sign in again.",
	"signed_out":     "You are signed out.",
	"invalid_state":  "The sign-in attempt expired or was started elsewhere. Try again.",
	"unknown_tenant": "There is no tenant with that id.",
}

var tenantID = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Handler serves the sign-in screen.
type Handler struct {
	Env       *layout.Env
	Issuers   []Issuer
	TenantSSO TenantSSO
	// LoginPath starts the code flow (default "/auth/login").
	LoginPath string
	// LocalMode: no identity provider is configured, so nobody signs in
	// here; the page explains API keys and the CLI.
	LocalMode bool
	// SignupEnabled links to self-service sign-up.
	SignupEnabled bool
}

// Get renders the sign-in page, or sends a signed-in person to the console.
func (h *Handler) Get(c *fiber.Ctx) error {
	if _, ok := h.Env.Principal(c); ok && c.Query("error") == "" {
		return c.Redirect("/members", fiber.StatusSeeOther)
	}
	m := Model{Page: h.Env.Page(c, "Sign in", ""), Welcome: c.Query("welcome") == "1", LocalMode: h.LocalMode, SignupEnabled: h.SignupEnabled}
	if h.LocalMode {
		return layout.Render(c, fiber.StatusOK, View(m))
	}
	if t := strings.ToLower(layout.Query(c, "tenant")); len(t) <= 63 && tenantID.MatchString(t) {
		m.Tenant = t
	}
	if code := c.Query("error"); code != "" {
		m.Error = Messages[code]
		if m.Error == "" {
			m.Error = "Sign-in failed. Try again."
		}
	}
	if m.Tenant != "" && h.TenantSSO != nil {
		iss, err := h.TenantSSO.TenantIssuers(c.UserContext(), m.Tenant)
		if err != nil {
			m.Error = h.Env.ErrorMessage(c, "find your tenant’s sign-in", err)
		}
		for _, i := range iss {
			m.SSO = append(m.SSO, Button{Label: "Continue with " + i.Name, Href: h.link(i.ID, m.Tenant)})
		}
	}
	for _, i := range h.Issuers {
		m.Providers = append(m.Providers, Button{Label: "Continue with " + i.Name, Href: h.link(i.ID, m.Tenant)})
	}
	return layout.Render(c, fiber.StatusOK, View(m))
}

func (h *Handler) link(issuer, tenant string) string {
	q := url.Values{"issuer": {issuer}}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	return h.LoginPath + "?" + q.Encode()
}
