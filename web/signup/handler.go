// Package signup is the console screen where a new organisation creates
// its tenant and first owner.
package signup

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web/layout"
)

// Service starts sign-ups (app/server implements it over tenants/ and
// app/oidc).
type Service interface {
	// Check reports whether the tenant id may be signed up for now: an
	// error wrapping store.ErrAlreadyExists when it is taken.
	Check(ctx context.Context, tenant string) error
	// Start sends the person to the identity provider with the sign-up.
	// Nothing is created before the provider has proved the owner's
	// e-mail address; the tenant is created, with that address as its
	// owner's, when the person comes back.
	Start(c *fiber.Ctx, req Request) error
}

// Request is the sign-up form.
type Request struct {
	// Tenant is the DNS-1123 tenant id; DisplayName the organisation's name.
	Tenant      string
	DisplayName string
	// OwnerName is the first owner's name. Their e-mail is the address
	// the identity provider verified.
	OwnerName string
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Handler serves the sign-up screen.
type Handler struct {
	Env     *layout.Env
	Service Service
	// Limit (optional) takes one sign-up from the client's allowance;
	// false answers 429 with the time until the next one.
	Limit func(c *fiber.Ctx) (ok bool, retryAfter time.Duration)
	// CSP (optional) replaces the page's Content-Security-Policy: the
	// console's, with the identity provider's origin as a form-action,
	// where the form's post is redirected.
	CSP string
}

func (h *Handler) setCSP(c *fiber.Ctx) {
	if h.CSP != "" {
		c.Set("Content-Security-Policy", h.CSP)
	}
}

// Get renders the empty form.
func (h *Handler) Get(c *fiber.Ctx) error {
	h.setCSP(c)
	return layout.Render(c, fiber.StatusOK, View(Model{Page: h.Env.Page(c, "Sign up", "")}))
}

// Post validates the form and sends the person to the identity provider,
// which proves the owner's e-mail address before the tenant is created.
func (h *Handler) Post(c *fiber.Ctx) error {
	h.setCSP(c)
	m := Model{
		Page:         h.Env.Page(c, "Sign up", ""),
		Organization: layout.Form(c, "organization"),
		Tenant:       strings.ToLower(layout.Form(c, "tenant")),
		Name:         layout.Form(c, "name"),
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
	if !m.HasErrors() {
		err := h.Service.Check(c.UserContext(), m.Tenant)
		if err == nil {
			err = h.Service.Start(c, Request{Tenant: m.Tenant, DisplayName: m.Organization, OwnerName: m.Name})
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrAlreadyExists):
			m.TenantError = "The tenant id " + m.Tenant + " is taken; choose another."
		default:
			m.Error = h.Env.ErrorMessage(c, "start the sign-up", err)
		}
	}
	return layout.Render(c, fiber.StatusUnprocessableEntity, View(m))
}
