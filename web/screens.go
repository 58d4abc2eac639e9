package web

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/web/approvals"
	"github.com/warden-dev/warden/web/layout"
)

// registerScreens mounts the approver's screens, the tool-call explorer
// and the fleet pages that have a service, then the console's HTML 404
// for every other page path.
func (cs *Console) registerScreens(r fiber.Router) {
	sh, in, pe := SecurityHeaders, cs.requireUser, cs.pageErrors
	if cs.deps.Approvals != nil {
		r.Get("/approvals", sh, in, pe, cs.approvals.Inbox)
		if cs.stream != nil {
			r.Get("/approvals/stream", sh, in, pe, cs.stream.Serve)
		}
		r.Get("/approvals/:ns/:name", sh, in, pe, cs.approvals.Show)
		r.Post("/approvals/:ns/:name/decide", sh, in, pe, cs.approvals.Decide)
	}
	if cs.deps.ToolCalls != nil {
		r.Get("/toolcalls", sh, in, pe, cs.toolcalls.List)
		r.Get("/toolcalls/:ns/:name", sh, in, pe, cs.toolcalls.Show)
	}
	if cs.deps.Fleet != nil {
		r.Get("/fleet", sh, in, pe, cs.fleet.List)
		r.Get("/fleet/:plural", sh, in, pe, cs.fleet.List)
		r.Get("/fleet/:plural/:ns/:name", sh, in, pe, cs.fleet.Show)
	}
	r.Get("/*", sh, cs.notFoundPage)
}

// landing is where a signed-in person starts: the approval inbox for
// whoever may decide somewhere, else the first screen of their menu.
func (cs *Console) landing(c *fiber.Ctx, p auth.Principal) string {
	if cs.deps.Menu == nil {
		if cs.deps.Approvals != nil {
			return "/approvals"
		}
		return "/members"
	}
	allowed := cs.deps.Menu(c.UserContext(), p)
	for _, item := range layout.Nav {
		if allowed[item.Key] && (item.Key != "approvals" || cs.deps.Approvals != nil) {
			return item.Href
		}
	}
	return "/members"
}

// PageErrors is middleware that renders the error of what follows it as a
// page in the console's style (never the API's JSON): the sign-in routes
// of app/oidc use it, so an OIDC callback error or a person with no
// membership gets a page.
func (cs *Console) PageErrors(c *fiber.Ctx) error { return cs.pageErrors(c) }

// pageErrors renders a screen's error as a page in the console's style
// (never the API's JSON): 400, 403, 404, 409 and the rest.
func (cs *Console) pageErrors(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	m := approvals.Problem{Page: cs.env.Page(c, "Error", ""), Status: fiber.StatusInternalServerError, Heading: "Something went wrong"}
	var fe *fiber.Error
	switch e, isAPI := apierr.As(err); {
	case isAPI:
		m.Status, m.Message = e.Status(), e.Message
	case errors.As(err, &fe):
		m.Status, m.Message = fe.Code, fe.Message
	case errors.Is(err, auth.ErrForbidden):
		m.Status, m.Message = fiber.StatusForbidden, "You do not have permission to see this."
	default:
		m.Message = cs.env.ErrorMessage(c, "show this page", err)
	}
	switch m.Status {
	case fiber.StatusUnauthorized:
		m.Heading = "Sign-in failed"
	case fiber.StatusNotFound:
		m.Heading = "Not found"
	case fiber.StatusForbidden:
		m.Heading = "Not allowed"
	case fiber.StatusBadRequest:
		m.Heading = "Bad request"
	}
	m.Page.Title = m.Heading
	return layout.Render(c, m.Status, approvals.ProblemPage(m))
}

// notFoundPage answers unknown page paths with the console's 404 page;
// API and well-known paths fall through to the API's JSON answer.
func (cs *Console) notFoundPage(c *fiber.Ctx) error {
	path := c.Path()
	if strings.HasPrefix(path, "/v1/") || path == "/v1" || strings.HasPrefix(path, "/.well-known/") || strings.HasPrefix(path, "/auth/") {
		return c.Next()
	}
	m := approvals.Problem{Page: cs.env.Page(c, "Not found", ""), Status: fiber.StatusNotFound, Heading: "Not found",
		Message: "There is no page at " + path + "."}
	return layout.Render(c, fiber.StatusNotFound, approvals.ProblemPage(m))
}
