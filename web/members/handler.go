// Package members is the console screen listing a tenant's people with their
// roles, inviting new ones and removing them.
package members

import (
	"context"
	"net/mail"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web/layout"
)

// Service is what the screen needs from tenant membership (tenants/ and
// app/authz implement it).
type Service interface {
	// Members lists the caller's tenant's members with their role.
	Members(ctx context.Context, p auth.Principal) ([]Member, error)
	// Invite adds a person to the caller's tenant with a role, in a
	// namespace ("*" or empty: default) unless the role is owner.
	Invite(ctx context.Context, p auth.Principal, inv Invitation) error
	// SetRole changes an existing member's role: a namespace role replaces
	// their role in that namespace; owner grants ownership of the tenant.
	SetRole(ctx context.Context, p auth.Principal, ch RoleChange) error
	// Remove removes a person from the caller's tenant.
	Remove(ctx context.Context, p auth.Principal, email string) error
}

// RoleChange is a row's change-role form.
type RoleChange struct {
	Email     string
	Role      string
	Namespace string
}

// Member is a tenant member as the screen shows it: the stored member plus
// a summary of role bindings (e.g. "owner", "admin in *", "editor in dev").
type Member struct {
	store.Member
	Role string
}

// Invitation is the invite form.
type Invitation struct {
	Email     string
	Role      string
	Namespace string
}

// Roles offered by the invite form, least privileged first.
var Roles = append(authz.NamespaceRoles(), auth.RoleOwner)

// Handler serves the members screen.
type Handler struct {
	Env     *layout.Env
	Service Service
}

// Get renders the screen.
func (h *Handler) Get(c *fiber.Ctx) error {
	m := h.model(c, Model{FormRole: auth.RoleViewer, FormNamespace: auth.AllNamespaces})
	return h.render(c, fiber.StatusOK, m)
}

// Invite handles POST /members/invite.
func (h *Handler) Invite(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	inv := Invitation{
		Email:     strings.ToLower(layout.Form(c, "email")),
		Role:      layout.Form(c, "role"),
		Namespace: layout.Form(c, "namespace"),
	}
	if inv.Namespace == "" {
		inv.Namespace = auth.AllNamespaces
	}
	form := Model{FormEmail: inv.Email, FormRole: inv.Role, FormNamespace: inv.Namespace}
	if a, err := mail.ParseAddress(inv.Email); err != nil || a.Address != inv.Email {
		form.EmailError = "Enter an e-mail address such as ada@example.com."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if !validRole(inv.Role) {
		form.Error = "Choose one of the offered roles."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if err := h.Service.Invite(c.UserContext(), p, inv); err != nil {
		form.Error = h.Env.ErrorMessage(c, "invite "+inv.Email, err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	return h.done(c, "Invited "+inv.Email+" as "+inv.Role+".")
}

// SetRole handles POST /members/:email/role. Owner is accepted only when
// the authorizer lets the caller grant ownership (owners); the service
// asks again.
func (h *Handler) SetRole(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	email, err := layout.Param(c, "email")
	if err != nil {
		return fiber.ErrBadRequest
	}
	ch := RoleChange{Email: email, Role: layout.Form(c, "role"), Namespace: layout.Form(c, "namespace")}
	if ch.Namespace == "" {
		ch.Namespace = auth.AllNamespaces
	}
	m := Model{FormRole: auth.RoleViewer, FormNamespace: auth.AllNamespaces}
	if !validRole(ch.Role) || (ch.Role == auth.RoleOwner && !h.Env.Allowed(c, authz.VerbCreate, "", authz.ObjMembersOwner)) {
		m.Error = "Choose one of the offered roles."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, m))
	}
	if err := h.Service.SetRole(c.UserContext(), p, ch); err != nil {
		m.Error = h.Env.ErrorMessage(c, "change the role of "+email, err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, m))
	}
	if ch.Role == auth.RoleOwner {
		return h.done(c, email+" is now an owner.")
	}
	return h.done(c, email+" is now "+ch.Role+" in "+ch.Namespace+".")
}

// Remove handles POST /members/:email/remove.
func (h *Handler) Remove(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	email, err := layout.Param(c, "email")
	if err != nil {
		return fiber.ErrBadRequest
	}
	if err := h.Service.Remove(c.UserContext(), p, email); err != nil {
		m := Model{FormRole: auth.RoleViewer, FormNamespace: auth.AllNamespaces}
		m.Error = h.Env.ErrorMessage(c, "remove "+email, err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, m))
	}
	return h.done(c, "Removed "+email+".")
}

// done answers a successful change: htmx gets the refreshed region with a
// notice, a plain form post is redirected back to the list (post/redirect/get).
func (h *Handler) done(c *fiber.Ctx, notice string) error {
	if layout.IsHTMX(c) {
		return h.render(c, fiber.StatusOK, h.model(c, Model{Notice: notice, FormRole: auth.RoleViewer, FormNamespace: auth.AllNamespaces}))
	}
	return c.Redirect("/members", fiber.StatusSeeOther)
}

func (h *Handler) render(c *fiber.Ctx, status int, m Model) error {
	if layout.IsHTMX(c) {
		// htmx does not swap error statuses; the region carries the error.
		return layout.Render(c, fiber.StatusOK, Region(m))
	}
	return layout.Render(c, status, View(m))
}

func (h *Handler) model(c *fiber.Ctx, m Model) Model {
	p, _ := h.Env.Principal(c)
	m.Page = h.Env.Page(c, "Members", "members")
	m.Roles = Roles
	m.CanManage = h.Env.Allowed(c, authz.VerbCreate, "", authz.ObjMembers)
	canOwn := h.Env.Allowed(c, authz.VerbCreate, "", authz.ObjMembersOwner)
	for _, r := range Roles {
		if r != auth.RoleOwner || canOwn {
			m.ChangeRoles = append(m.ChangeRoles, r)
		}
	}
	list, err := h.Service.Members(c.UserContext(), p)
	if err != nil && m.Error == "" {
		m.Error = h.Env.ErrorMessage(c, "list members", err)
	}
	for _, mb := range list {
		r := Row{Email: mb.Email, Name: mb.Name, Role: mb.Role, Status: mb.Status, Joined: mb.CreatedAt.UTC().Format("2006-01-02")}
		if r.Role == "" && mb.Owner {
			r.Role = auth.RoleOwner
		}
		if mb.LastLogin != nil {
			r.LastLogin = mb.LastLogin.UTC().Format("2006-01-02 15:04 UTC")
		}
		if m.CanManage && mb.Email != p.Email {
			r.RemovePath = "/members/" + url.PathEscape(mb.Email) + "/remove"
			r.RolePath = "/members/" + url.PathEscape(mb.Email) + "/role"
			r.ID = strings.NewReplacer("@", "-at-", ".", "-").Replace(mb.Email)
		}
		m.Rows = append(m.Rows, r)
	}
	return m
}

func validRole(r string) bool {
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}
