// Package namespaces is the console screen listing a tenant's namespaces
// and creating new ones.
package namespaces

import (
	"context"
	"regexp"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/web/layout"
)

// Service is what the screen needs from namespaces (backed by Namespace
// resources through the same code the API uses).
type Service interface {
	// Namespaces lists the namespaces of the caller's tenant the caller may see.
	Namespaces(ctx context.Context, p auth.Principal) ([]Namespace, error)
	// CreateNamespace creates a namespace in the caller's tenant.
	CreateNamespace(ctx context.Context, p auth.Principal, name string) error
}

// Namespace is a namespace as the screen shows it.
type Namespace struct {
	Name        string
	DisplayName string
	CreatedAt   time.Time
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Handler serves the namespaces screen.
type Handler struct {
	Env     *layout.Env
	Service Service
}

// Get renders the screen.
func (h *Handler) Get(c *fiber.Ctx) error {
	return h.render(c, fiber.StatusOK, h.model(c, Model{}))
}

// Create handles POST /namespaces.
func (h *Handler) Create(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	name := layout.Form(c, "name")
	form := Model{FormName: name}
	if len(name) > 63 || !dns1123.MatchString(name) {
		form.NameError = "Use 1–63 lower-case letters, digits and hyphens, starting and ending with a letter or digit."
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if err := h.Service.CreateNamespace(c.UserContext(), p, name); err != nil {
		form.Error = h.Env.ErrorMessage(c, "create namespace "+name, err)
		return h.render(c, fiber.StatusUnprocessableEntity, h.model(c, form))
	}
	if layout.IsHTMX(c) {
		return h.render(c, fiber.StatusOK, h.model(c, Model{Notice: "Created namespace " + name + "."}))
	}
	return c.Redirect("/namespaces", fiber.StatusSeeOther)
}

func (h *Handler) render(c *fiber.Ctx, status int, m Model) error {
	if layout.IsHTMX(c) {
		return layout.Render(c, fiber.StatusOK, Region(m))
	}
	return layout.Render(c, status, View(m))
}

func (h *Handler) model(c *fiber.Ctx, m Model) Model {
	p, _ := h.Env.Principal(c)
	m.Page = h.Env.Page(c, "Namespaces", "namespaces")
	m.CanCreate = h.Env.Allowed(c, auth.VerbApply, "", "namespaces")
	list, err := h.Service.Namespaces(c.UserContext(), p)
	if err != nil && m.Error == "" {
		m.Error = h.Env.ErrorMessage(c, "list namespaces", err)
	}
	for _, n := range list {
		m.Rows = append(m.Rows, Row{Name: n.Name, DisplayName: n.DisplayName, Created: n.CreatedAt.UTC().Format("2006-01-02")})
	}
	return m
}
