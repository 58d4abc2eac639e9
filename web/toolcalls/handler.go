// Package toolcalls is the console's tool-call explorer: the list with the
// API's filters (agent, tool, phase, since) and a call's page.
package toolcalls

import (
	"context"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/web/layout"
)

// Filter narrows the list as GET /v1/…/toolcalls does.
type Filter struct {
	Agent string
	Tool  string
	Phase string
	// Since is RFC 3339 or a duration such as 1h.
	Since string
}

// Row is one call of the list.
type Row struct {
	Namespace  string
	Name       string
	Agent      string
	Tool       string
	SideEffect string
	Phase      string
	Created    string
}

// Call is a call's page.
type Call struct {
	Row
	Environment    string
	Input          string
	Output         string
	IdempotencyKey string
	ApprovalStatus string
	ApprovedBy     string
	Approval       string
	StartedAt      string
	CompletedAt    string
	// TraceID is the call's trace (the annotation warden.dev/trace-id),
	// empty when it was recorded without tracing.
	TraceID string
	Audit   []AuditRow
}

// TraceHref is the page of the call's trace.
func (c Call) TraceHref() string {
	return "/traces/" + url.PathEscape(c.TraceID) + "?namespace=" + url.QueryEscape(c.Namespace)
}

// AuditRow is one audit record about the call or its approval.
type AuditRow struct {
	Time    string
	Actor   string
	Verb    string
	Outcome string
	Reason  string
}

// Service reads tool calls for the console.
type Service interface {
	// List returns the calls p may read that match f, newest first, at
	// most 200.
	List(ctx context.Context, p auth.Principal, f Filter) ([]Row, error)
	// Get returns one call with its audit records.
	Get(ctx context.Context, p auth.Principal, ns, name string) (Call, error)
}

// Phases offered by the phase filter.
var Phases = []string{"Pending", "AwaitingApproval", "Running", "Succeeded", "Failed", "Denied", "Cancelled", "Expired"}

// Handler serves the explorer.
type Handler struct {
	Env     *layout.Env
	Service Service
}

// ListModel is the list screen.
type ListModel struct {
	Page   layout.Page
	Filter Filter
	Phases []string
	Rows   []Row
	Error  string
}

// CallModel is a call's screen.
type CallModel struct {
	Page layout.Page
	Call Call
}

// List renders the list; htmx filter changes get only the results.
func (h *Handler) List(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	f := Filter{Agent: layout.Query(c, "agent"), Tool: layout.Query(c, "tool"), Phase: layout.Query(c, "phase"), Since: layout.Query(c, "since")}
	m := ListModel{Page: h.Env.Page(c, "Tool calls", "toolcalls"), Filter: f, Phases: Phases}
	rows, err := h.Service.List(c.UserContext(), p, f)
	if err != nil {
		m.Error = h.Env.ErrorMessage(c, "list tool calls", err)
	}
	m.Rows = rows
	if layout.IsHTMX(c) {
		return layout.Render(c, fiber.StatusOK, Results(m))
	}
	return layout.Render(c, fiber.StatusOK, ListView(m))
}

// Show renders one call.
func (h *Handler) Show(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	ns, err1 := layout.Param(c, "ns")
	name, err2 := layout.Param(c, "name")
	if err1 != nil || err2 != nil {
		return fiber.ErrBadRequest
	}
	call, err := h.Service.Get(c.UserContext(), p, ns, name)
	if err != nil {
		return err
	}
	return layout.Render(c, fiber.StatusOK, CallView(CallModel{Page: h.Env.Page(c, "Tool call "+name, "toolcalls"), Call: call}))
}

// Href is the page of a call.
func (r Row) Href() string {
	return "/toolcalls/" + url.PathEscape(r.Namespace) + "/" + url.PathEscape(r.Name)
}
