// Package signup is the console screen where a new organisation creates
// its tenant and first owner.
package signup

import (
	"context"
	"errors"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web/layout"
)

// Service creates tenants (tenants/ implements it).
type Service interface {
	// Signup creates the tenant and its first owner, who then signs in.
	Signup(ctx context.Context, req Request) (store.TenantRecord, error)
}

// Request is the sign-up form.
type Request struct {
	// Tenant is the DNS-1123 tenant id; DisplayName the organisation's name.
	Tenant      string
	DisplayName string
	// OwnerEmail and OwnerName are the first owner.
	OwnerEmail string
	OwnerName  string
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Handler serves the sign-up screen.
type Handler struct {
	Env     *layout.Env
	Service Service
	// Limit (optional) takes one sign-up from the client's allowance;
	// false answers 429 with the time until the next one.
	Limit func(c *fiber.Ctx) (ok bool, retryAfter time.Duration)
}

// Get renders the empty form.
func (h *Handler) Get(c *fiber.Ctx) error {
	return layout.Render(c, fiber.StatusOK, View(Model{Page: h.Env.Page(c, "Sign up", "")}))
}

// Post validates the form, creates the tenant and sends the new owner to
// sign in.
func (h *Handler) Post(c *fiber.Ctx) error {
	m := Model{
		Page:         h.Env.Page(c, "Sign up", ""),
		Organization: layout.Form(c, "organization"),
		Tenant:       strings.ToLower(layout.Form(c, "tenant")),
		Name:         layout.Form(c, "name"),
		Email:        strings.ToLower(layout.Form(c, "email")),
	}
	if h.Limit != nil {
		if ok, wait := h.Limit(c); !ok {
			mins := int(math.Ceil(wait.Minutes()))
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			m.Error = "Too many sign-ups from your network. Try again in " + strconv.Itoa(mins) + " minute(s)."
			return layout.Render(c, fiber.StatusTooManyRequests, View(m))
		}
	}
	if m.Organization == "" {
		m.OrganizationError = "Enter your organisation’s name."
	}
	if len(m.Tenant) < 3 || len(m.Tenant) > 40 || !dns1123.MatchString(m.Tenant) {
		m.TenantError = "Use 3–40 lower-case letters, digits and hyphens, starting and ending with a letter or digit."
	}
	if m.Name == "" {
		m.NameError = "Enter your name."
	}
	if a, err := mail.ParseAddress(m.Email); err != nil || a.Address != m.Email {
		m.EmailError = "Enter an e-mail address such as ada@example.com."
	}
	if !m.HasErrors() {
		_, err := h.Service.Signup(c.UserContext(), Request{Tenant: m.Tenant, DisplayName: m.Organization, OwnerEmail: m.Email, OwnerName: m.Name})
		switch {
		case err == nil:
			return c.Redirect("/signin?welcome=1&tenant="+url.QueryEscape(m.Tenant), fiber.StatusSeeOther)
		case errors.Is(err, store.ErrAlreadyExists):
			m.TenantError = "The tenant id " + m.Tenant + " is taken; choose another."
		default:
			m.Error = h.Env.ErrorMessage(c, "create the tenant", err)
		}
	}
	return layout.Render(c, fiber.StatusUnprocessableEntity, View(m))
}
