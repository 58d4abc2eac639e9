// Package fleet is the console's read-only view of what `warden apply` put
// in a tenant: agents (with their compiled manifest and deployments),
// tools, policies and models.
package fleet

import (
	"context"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/web/layout"
)

// Kinds the fleet screen lists, by path segment.
var Kinds = []Tab{
	{Plural: "agents", Label: "Agents"},
	{Plural: "tools", Label: "Tools"},
	{Plural: "policies", Label: "Policies"},
	{Plural: "models", Label: "Models"},
}

// Tab is one kind of the fleet screen.
type Tab struct {
	Plural string
	Label  string
}

// Item is one resource of a list.
type Item struct {
	Namespace string
	Name      string
	// Summary says what it is in a few words ("financial, rest").
	Summary string
	Created string
}

// Detail is one resource: its spec, and for an agent its compiled
// manifest and deployments.
type Detail struct {
	Plural      string
	Namespace   string
	Name        string
	Spec        string
	Status      string
	Manifest    string
	Deployments []Item
}

// Service reads the fleet for the console.
type Service interface {
	// List returns the resources of kind plural that p may read.
	List(ctx context.Context, p auth.Principal, plural string) ([]Item, error)
	// Get returns one resource.
	Get(ctx context.Context, p auth.Principal, plural, ns, name string) (Detail, error)
}

// Handler serves the fleet screens.
type Handler struct {
	Env     *layout.Env
	Service Service
}

// ListModel is a kind's list.
type ListModel struct {
	Page   layout.Page
	Tabs   []Tab
	Active string
	Items  []Item
	Error  string
}

// DetailModel is one resource.
type DetailModel struct {
	Page   layout.Page
	Detail Detail
}

// List renders /fleet and /fleet/{plural}.
func (h *Handler) List(c *fiber.Ctx) error {
	plural := c.Params("plural", "agents")
	if !known(plural) {
		return fiber.ErrNotFound
	}
	p, _ := h.Env.Principal(c)
	m := ListModel{Page: h.Env.Page(c, "Fleet", "fleet"), Tabs: Kinds, Active: plural}
	items, err := h.Service.List(c.UserContext(), p, plural)
	if err != nil {
		m.Error = h.Env.ErrorMessage(c, "list "+plural, err)
	}
	m.Items = items
	return layout.Render(c, fiber.StatusOK, ListView(m))
}

// Show renders one resource.
func (h *Handler) Show(c *fiber.Ctx) error {
	plural := c.Params("plural")
	if !known(plural) {
		return fiber.ErrNotFound
	}
	ns, err1 := layout.Param(c, "ns")
	name, err2 := layout.Param(c, "name")
	if err1 != nil || err2 != nil {
		return fiber.ErrBadRequest
	}
	p, _ := h.Env.Principal(c)
	d, err := h.Service.Get(c.UserContext(), p, plural, ns, name)
	if err != nil {
		return err
	}
	return layout.Render(c, fiber.StatusOK, DetailView(DetailModel{Page: h.Env.Page(c, name, "fleet"), Detail: d}))
}

func known(plural string) bool {
	for _, k := range Kinds {
		if k.Plural == plural {
			return true
		}
	}
	return false
}

// Href is the page of an item of kind plural.
func Href(plural string, it Item) string {
	return "/fleet/" + plural + "/" + url.PathEscape(it.Namespace) + "/" + url.PathEscape(it.Name)
}
