package layout

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
)

// TenantLister lists the tenants a signed-in person belongs to, for the
// tenant switcher.
type TenantLister interface {
	Tenants(ctx context.Context, p auth.Principal) ([]store.TenantRecord, error)
}

// Env is what every screen's handler shares: who is signed in, the CSRF
// token and the asset URLs. The web package builds one for the console.
type Env struct {
	Principal        func(c *fiber.Ctx) (auth.Principal, bool)
	CSRFToken        func(c *fiber.Ctx) string
	CSRFField        string
	CSRFHeader       string
	Tenants          TenantLister
	SwitchTenantPath string
	StyleURL         string
	ScriptURL        string
	Log              *slog.Logger
	// Menu, when set, reports which Nav keys the person may use; the menu
	// shows only those. Nil shows every item.
	Menu func(ctx context.Context, p auth.Principal) map[string]bool
	// Authorize is app/authz's decision (web.Deps.Authorize).
	Authorize func(ctx context.Context, p auth.Principal, verb, namespace, object string) error
}

// Allowed reports whether the request's person may do verb on object in
// namespace, as app/authz decides; false without a person or an
// Authorize.
func (e *Env) Allowed(c *fiber.Ctx, verb, namespace, object string) bool {
	p, ok := e.Principal(c)
	if !ok || e.Authorize == nil {
		return false
	}
	return e.Authorize(c.UserContext(), p, verb, namespace, object) == nil
}

// Page returns the frame of a screen for this request.
func (e *Env) Page(c *fiber.Ctx, title, active string) Page {
	// Principal first: resolving the session is what makes its CSRF token
	// available (app/oidc keeps both in the request's locals).
	p, ok := e.Principal(c)
	token := e.CSRFToken(c)
	hx, _ := json.Marshal(map[string]string{e.CSRFHeader: token}) // strings only: cannot fail
	pg := Page{
		Title: title, Active: active, CSRFField: e.CSRFField, CSRFToken: token, HXHeaders: string(hx),
		StyleURL: e.StyleURL, ScriptURL: e.ScriptURL, SwitchTenantPath: e.SwitchTenantPath,
	}
	if !ok {
		return pg
	}
	pg.SignedIn, pg.UserEmail, pg.Tenant = true, p.Email, p.Tenant
	pg.Nav = Nav
	if e.Menu != nil {
		allowed := e.Menu(c.UserContext(), p)
		pg.Nav = nil
		for _, item := range Nav {
			if allowed[item.Key] {
				pg.Nav = append(pg.Nav, item)
			}
		}
	}
	if pg.UserEmail == "" {
		pg.UserEmail = p.Subject
	}
	if e.Tenants != nil {
		ts, err := e.Tenants.Tenants(c.UserContext(), p)
		if err != nil {
			e.Log.ErrorContext(c.UserContext(), "console: list tenants for switcher", "err", err)
		}
		for _, t := range ts {
			name := t.DisplayName
			if name == "" {
				name = t.ID
			}
			pg.Tenants = append(pg.Tenants, TenantOption{ID: t.ID, Name: name, Current: t.ID == p.Tenant})
		}
	}
	return pg
}

// IsHTMX reports whether the request came from htmx (and wants a fragment).
func IsHTMX(c *fiber.Ctx) bool {
	return c.Get("HX-Request") == "true" && c.Get("HX-History-Restore-Request") != "true"
}

// Render writes a component as the HTML response with status.
func Render(c *fiber.Ctx, status int, comp templ.Component) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	// Console pages may carry secrets (a new API key) and personal data.
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderVary, "HX-Request")
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

// ErrorMessage turns a service error into text fit for the page. Only
// messages written for callers (API errors) and known sentinels are shown;
// anything else is logged and replaced by a generic sentence, so internal
// detail never reaches the browser.
func (e *Env) ErrorMessage(c *fiber.Ctx, action string, err error) string {
	if ae, ok := apierr.As(err); ok && ae.Status() < 500 {
		return ae.Message
	}
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return "You do not have permission to " + action + "."
	case errors.Is(err, store.ErrAlreadyExists):
		return "That already exists."
	case errors.Is(err, store.ErrNotFound):
		return "It no longer exists; reload the page."
	case errors.Is(err, store.ErrConflict):
		return "Someone changed this at the same time; try again."
	}
	e.Log.ErrorContext(c.UserContext(), "console: "+action, "err", err, "path", c.Path())
	return "Could not " + action + " because of an internal error. Try again; if it persists, contact your administrator."
}

// Form returns a trimmed form value as a string of its own. Fiber's values
// point into a request buffer it reuses after the handler returns, and
// services may keep what they are given.
func Form(c *fiber.Ctx, name string) string {
	return strings.Clone(strings.TrimSpace(c.FormValue(name)))
}

// Query returns a trimmed query parameter as a string of its own.
func Query(c *fiber.Ctx, name string) string {
	return strings.Clone(strings.TrimSpace(c.Query(name)))
}

// Param returns a path parameter, unescaped, as a string of its own.
func Param(c *fiber.Ctx, name string) (string, error) {
	v, err := url.PathUnescape(c.Params(name))
	return strings.Clone(v), err
}
