// Package tenants is the console's tenant screens: the choose-a-tenant page
// a person in several tenants gets after signing in, and /tenants, listing
// the person's tenants with a switch button each. Choosing posts to
// app/oidc's /auth/choose, switching to /auth/switch.
package tenants

import (
	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/web/layout"
)

// Handler serves the tenant screens.
type Handler struct {
	Env *layout.Env
}

// Choose renders the choose-a-tenant page for ch (app/oidc's
// RenderChoice, after a sign-in that found several tenants).
func (h *Handler) Choose(c *fiber.Ctx, ch Choice) error {
	m := ChooseModel{Page: h.Env.Page(c, "Choose a tenant", ""), Email: ch.Email, Action: ch.Action,
		TokenField: ch.TokenField, Token: ch.Token, Tenants: ch.Tenants}
	return layout.Render(c, fiber.StatusOK, ChooseView(m))
}

// List serves GET /tenants.
func (h *Handler) List(c *fiber.Ctx) error {
	pg := h.Env.Page(c, "Tenants", "")
	m := ListModel{Page: pg, SwitchPath: pg.SwitchTenantPath}
	for _, t := range pg.Tenants {
		m.Rows = append(m.Rows, Row{ID: t.ID, Name: t.Name, Current: t.Current})
	}
	if len(m.Rows) == 0 && pg.Tenant != "" {
		// Without a lister the page still names the current tenant.
		m.Rows = []Row{{ID: pg.Tenant, Name: pg.Tenant, Current: true}}
	}
	return layout.Render(c, fiber.StatusOK, ListView(m))
}
