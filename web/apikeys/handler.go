// Package apikeys is the console screen for a tenant's API keys: list,
// create (the secret is shown exactly once) and revoke.
package apikeys

import (
	"context"
	"net/url"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web/layout"
)

// Service is what the screen needs from API key management.
type Service interface {
	// APIKeys lists the caller's tenant's keys (no secrets exist to list).
	APIKeys(ctx context.Context, p auth.Principal) ([]store.APIKey, error)
	// CreateAPIKey makes a key and returns its secret (wk_…), which is
	// stored only as a hash.
	CreateAPIKey(ctx context.Context, p auth.Principal, req Request) (secret string, key store.APIKey, err error)
	// RevokeAPIKey revokes a key of the caller's tenant.
	RevokeAPIKey(ctx context.Context, p auth.Principal, id string) error
}

// Request is the create form.
type Request struct {
	Name      string
	Namespace string
	// Role is empty for an agent-bound key (its role is agent).
	Role string
	// Agent binds the key to one agent of Namespace; empty for none.
	Agent string
	// ExpiresIn is a duration such as "720h"; empty means no expiry.
	ExpiresIn string
}

// Lifetime is one choice of the create form's expiry select.
type Lifetime struct {
	Value string // a duration for Request.ExpiresIn; "" for never
	Label string
}

// Lifetimes are the expiries the create form offers.
var Lifetimes = []Lifetime{
	{"", "Never"}, {"168h", "7 days"}, {"720h", "30 days"}, {"2160h", "90 days"}, {"8760h", "1 year"},
}

// Roles a key may carry (owner is for people only).
var Roles = authz.NamespaceRoles()

// Handler serves the API keys screen.
type Handler struct {
	Env     *layout.Env
	Service Service
	Now     func() time.Time
}

func blank() Model { return Model{FormRole: auth.RoleViewer, FormNamespace: auth.AllNamespaces} }

// dnsLabel reports whether s is a DNS-1123 label (an agent's name).
func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// Get renders the screen (never with a secret).
func (h *Handler) Get(c *fiber.Ctx) error {
	return h.render(c, fiber.StatusOK, h.model(c, blank()))
}

// Create handles POST /apikeys. The answer shows the new secret; it is not
// a redirect, because the secret must not travel through a URL or a session.
func (h *Handler) Create(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	req := Request{
		Name:      layout.Form(c, "name"),
		Namespace: layout.Form(c, "namespace"),
		Role:      layout.Form(c, "role"),
		Agent:     layout.Form(c, "agent"),
		ExpiresIn: layout.Form(c, "expires"),
	}
	if req.Namespace == "" {
		req.Namespace = auth.AllNamespaces
	}
	form := Model{FormName: req.Name, FormNamespace: req.Namespace, FormRole: req.Role, FormAgent: req.Agent, FormExpires: req.ExpiresIn}
	if req.Name == "" || len(req.Name) > 63 {
		form.NameError = "Give the key a name of 1–63 characters, e.g. ci-deploy."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if req.Agent != "" {
		switch {
		case !dnsLabel(req.Agent):
			form.AgentError = "An agent name has lower-case letters, digits and hyphens, e.g. triage-bot."
		case req.Namespace == auth.AllNamespaces:
			form.AgentError = "A key bound to an agent is scoped to the agent's namespace: name it instead of *."
		}
		if form.AgentError != "" {
			return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
		}
		// An agent-bound key has role agent, whatever the role select says.
		req.Role = ""
	} else if !slices.Contains(Roles, req.Role) {
		form.Error = "Choose one of the offered roles."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if !slices.ContainsFunc(Lifetimes, func(l Lifetime) bool { return l.Value == req.ExpiresIn }) {
		form.Error = "Choose one of the offered expiries."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	secret, key, err := h.Service.CreateAPIKey(c.UserContext(), p, req)
	if err != nil {
		form.Error = h.Env.ErrorMessage(c, "create API key "+req.Name, err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	m := blank()
	m.NewSecret, m.NewKeyName = secret, key.Name
	return h.render(c, fiber.StatusOK, h.model(c, m))
}

// Revoke handles POST /apikeys/:id/revoke.
func (h *Handler) Revoke(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	id, err := layout.Param(c, "id")
	if err != nil {
		return fiber.ErrBadRequest
	}
	m := blank()
	if err := h.Service.RevokeAPIKey(c.UserContext(), p, id); err != nil {
		m.Error = h.Env.ErrorMessage(c, "revoke API key", err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, m))
	}
	if !layout.IsHTMX(c) {
		return c.Redirect("/apikeys", fiber.StatusSeeOther)
	}
	m.Notice = "Key revoked; it stops working at once."
	return h.render(c, fiber.StatusOK, h.model(c, m))
}

func (h *Handler) render(c *fiber.Ctx, status int, m Model) error {
	if layout.IsHTMX(c) {
		return layout.Render(c, fiber.StatusOK, Region(m))
	}
	return layout.Render(c, status, View(m))
}

func (h *Handler) model(c *fiber.Ctx, m Model) Model {
	p, _ := h.Env.Principal(c)
	m.Page = h.Env.Page(c, "API keys", "apikeys")
	m.Roles = Roles
	m.Lifetimes = Lifetimes
	m.CanManage = h.Env.Allowed(c, authz.VerbCreate, "", authz.ObjAPIKeys)
	keys, err := h.Service.APIKeys(c.UserContext(), p)
	if err != nil && m.Error == "" {
		m.Error = h.Env.ErrorMessage(c, "list API keys", err)
	}
	now := h.Now()
	for _, k := range keys {
		r := Row{ID: k.ID, Name: k.Name, Namespace: k.Namespace, Role: k.Role, Agent: k.Agent, Created: k.CreatedAt.UTC().Format("2006-01-02"),
			Status: "active", Expires: "never", LastUsed: "never"}
		if r.Namespace == auth.AllNamespaces {
			r.Namespace = "* (all)"
		}
		if k.ExpiresAt != nil {
			r.Expires = k.ExpiresAt.UTC().Format("2006-01-02 15:04")
		}
		if k.LastUsedAt != nil {
			r.LastUsed = k.LastUsedAt.UTC().Format("2006-01-02 15:04")
		}
		switch {
		case k.RevokedAt != nil:
			r.Status = "revoked"
		case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
			r.Status = "expired"
		case m.CanManage:
			r.RevokePath = "/apikeys/" + url.PathEscape(k.ID) + "/revoke"
		}
		m.Rows = append(m.Rows, r)
	}
	return m
}
