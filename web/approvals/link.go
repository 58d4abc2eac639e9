// Package approvals holds the approver's screens: the page an e-mail link
// opens (no session needed: the signed link names the person), the
// approval inbox and the approval page.
package approvals

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/notifications"
	"github.com/warden-dev/warden/web/layout"
	"github.com/warden-dev/warden/web/static"
)

// LinkService verifies e-mail links and decides through them;
// *notifications.Service is one.
type LinkService interface {
	OpenLink(ctx context.Context, token string) (notifications.LinkView, error)
	DecideLink(ctx context.Context, token, decision, rationale string) (notifications.LinkView, error)
}

// LinkHandler serves notifications.LinkPath.
type LinkHandler struct {
	Links LinkService
	Now   func() time.Time
	page  layout.Page
}

// NewLinkHandler builds the handler of e-mail links.
func NewLinkHandler(links LinkService, now func() time.Time) *LinkHandler {
	if now == nil {
		now = time.Now
	}
	a := static.New()
	return &LinkHandler{Links: links, Now: now, page: layout.Page{Title: "Approval", StyleURL: a.URL("style.css"), ScriptURL: a.URL("htmx.min.js")}}
}

// Register mounts the link page (GET shows, POST decides).
func (h *LinkHandler) Register(r fiber.Router) {
	r.Get(notifications.LinkPath, secure, h.Get)
	r.Post(notifications.LinkPath, secure, h.Post)
}

// secure sets the console's security headers; the page holds a
// credential in its URL, so nothing may cache it.
func secure(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Next()
}

// Get shows the approval; it never decides.
func (h *LinkHandler) Get(c *fiber.Ctx) error {
	tok := c.Query("t")
	v, err := h.Links.OpenLink(c.UserContext(), tok)
	if err != nil {
		return h.problem(c, err)
	}
	return layout.Render(c, fiber.StatusOK, Link(h.model(v, tok)))
}

// Post decides as the link's recipient.
func (h *LinkHandler) Post(c *fiber.Ctx) error {
	tok := c.FormValue("t")
	v, err := h.Links.DecideLink(c.UserContext(), tok, c.FormValue("decision"), c.FormValue("rationale"))
	if err != nil {
		if e, ok := apierr.As(err); ok && v.Approval.Name != "" {
			m := h.model(v, tok)
			m.Error = e.Message
			return layout.Render(c, e.Status(), Link(m))
		}
		return h.problem(c, err)
	}
	m := h.model(v, tok)
	m.Notice = "Your decision is recorded: " + v.Status + "."
	return layout.Render(c, fiber.StatusOK, Link(m))
}

func (h *LinkHandler) model(v notifications.LinkView, tok string) LinkPage {
	return LinkPage{Page: h.page, Detail: DetailOf(v, h.Now()), Token: tok, Recipient: v.Claims.Recipient}
}

// problem renders a refused link as a page.
func (h *LinkHandler) problem(c *fiber.Ctx, err error) error {
	p := Problem{Page: h.page, Status: fiber.StatusForbidden, Heading: "This link cannot be used"}
	switch e, isAPI := apierr.As(err); {
	case errors.Is(err, notifications.ErrLinkExpired):
		p.Status, p.Message = fiber.StatusGone, "The link has expired with its approval."
	case errors.Is(err, notifications.ErrBadLink):
		p.Message = "The link is not valid: it was altered or not sent by this Warden."
	case isAPI:
		p.Status, p.Message = e.Status(), e.Message
	default:
		p.Status, p.Heading, p.Message = fiber.StatusInternalServerError, "Something went wrong", "The approval could not be read; try again."
	}
	p.Page.Title = p.Heading
	return layout.Render(c, p.Status, ProblemPage(p))
}

// DetailOf flattens a link's view for the screen.
func DetailOf(v notifications.LinkView, now time.Time) Detail {
	a := v.Approval
	return Detail{Namespace: a.Namespace, Name: a.Name, Agent: a.Agent, Tool: a.Tool, SideEffect: a.SideEffect, Reason: a.Reason,
		Policy: a.Policy, Rule: a.Rule, Input: a.InputJSON(), ExpiresAt: a.ExpiresAt.UTC().Format("2006-01-02 15:04 MST"),
		TimeLeft: TimeLeft(a.ExpiresAt, now), ToolCall: a.ToolCall, Status: v.Status, DecidedBy: v.DecidedBy, DecidedAt: v.DecidedAt,
		Rationale: v.Rationale, Channel: v.Channel, Phase: v.Phase}
}

// TimeLeft says how long until t: "3 h 5 min", "42 min", "under a
// minute", "expired".
func TimeLeft(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "expired"
	case d < time.Minute:
		return "under a minute left"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min left"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + " min left"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days left"
}

// asStatus is the HTTP status of an API error.
func asStatus(err error) (int, bool) {
	if e, ok := apierr.As(err); ok {
		return e.Status(), true
	}
	return 0, false
}
