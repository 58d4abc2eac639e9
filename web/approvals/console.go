package approvals

import (
	"context"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/notifications"
	"github.com/warden-dev/warden/web/layout"
)

// Record is one approval as the console shows it.
type Record struct {
	Approval notifications.Approval
	Created  time.Time
	// Status, DecidedBy, DecidedAt, Rationale, Channel: the outcome.
	Status    string
	DecidedBy string
	DecidedAt string
	Rationale string
	Channel   string
	// Phase is the call's phase.
	Phase string
}

// Page is what the approval page needs beyond the record.
type Page struct {
	Record Record
	// CanDecide and CanOverride are what the person may do here.
	CanDecide   bool
	CanOverride bool
	// Recent are the agent's latest calls, newest first.
	Recent []CallRow
	// Deliveries are the notification attempts, oldest first.
	Deliveries []DeliveryRow
}

// CallRow is one recent call.
type CallRow struct {
	Namespace string
	Name      string
	Tool      string
	Phase     string
	Created   string
}

// DeliveryRow is one notification attempt.
type DeliveryRow struct {
	Time      string
	Channel   string
	Type      string
	Recipient string
	Attempt   int
	Outcome   string
	Error     string
}

// Service is what the approver's screens need.
type Service interface {
	// Inbox lists the pending approvals of every namespace where p may
	// decide, newest first.
	Inbox(ctx context.Context, p auth.Principal) ([]Record, error)
	// Approval reads one approval, what p may do with it, the agent's
	// recent calls and the notification attempts.
	Approval(ctx context.Context, p auth.Principal, ns, name string) (Page, error)
	// Decide decides as p through the gateway (channel console).
	Decide(ctx context.Context, p auth.Principal, ns, name, decision, rationale string, override bool) error
}

// Handler serves the inbox and the approval page.
type Handler struct {
	Env     *layout.Env
	Service Service
	Now     func() time.Time
	// StreamURL is the inbox's event stream ("" keeps the page static);
	// ScriptURL the script that follows it (static inbox.js).
	StreamURL string
	ScriptURL string
}

// InboxModel is the inbox screen.
type InboxModel struct {
	Page  layout.Page
	Rows  []InboxRow
	Error string
	// StreamURL and ScriptURL: see Handler.
	StreamURL string
	ScriptURL string
}

// InboxRow is one pending approval.
type InboxRow struct {
	Href       string
	Namespace  string
	Name       string
	Agent      string
	Tool       string
	SideEffect string
	Reason     string
	Requested  string
	TimeLeft   string
}

// ApprovalModel is the approval page.
type ApprovalModel struct {
	Page        layout.Page
	Detail      Detail
	Action      string
	CanDecide   bool
	CanOverride bool
	Recent      []CallRow
	Deliveries  []DeliveryRow
	Notice      string
	Error       string
}

// Inbox renders the inbox; an htmx request gets only its results.
func (h *Handler) Inbox(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	m := InboxModel{Page: h.Env.Page(c, "Approvals", "approvals"), StreamURL: h.StreamURL, ScriptURL: h.ScriptURL}
	recs, err := h.Service.Inbox(c.UserContext(), p)
	if err != nil {
		m.Error = h.Env.ErrorMessage(c, "list approvals", err)
	}
	m.Rows = InboxRows(recs, h.now())
	if layout.IsHTMX(c) {
		return layout.Render(c, fiber.StatusOK, InboxResults(m))
	}
	return layout.Render(c, fiber.StatusOK, InboxView(m))
}

// InboxRows flattens records for the inbox.
func InboxRows(recs []Record, now time.Time) []InboxRow {
	rows := make([]InboxRow, 0, len(recs))
	for _, r := range recs {
		a := r.Approval
		rows = append(rows, InboxRow{Href: "/approvals/" + url.PathEscape(a.Namespace) + "/" + url.PathEscape(a.Name),
			Namespace: a.Namespace, Name: a.Name, Agent: a.Agent, Tool: a.Tool, SideEffect: a.SideEffect, Reason: a.Reason,
			Requested: r.Created.UTC().Format("2006-01-02 15:04"), TimeLeft: TimeLeft(a.ExpiresAt, now)})
	}
	return rows
}

// Show renders one approval.
func (h *Handler) Show(c *fiber.Ctx) error {
	return h.show(c, fiber.StatusOK, "", "")
}

func (h *Handler) show(c *fiber.Ctx, status int, notice, errMsg string) error {
	p, _ := h.Env.Principal(c)
	ns, err1 := layout.Param(c, "ns")
	name, err2 := layout.Param(c, "name")
	if err1 != nil || err2 != nil {
		return fiber.ErrBadRequest
	}
	pg, err := h.Service.Approval(c.UserContext(), p, ns, name)
	if err != nil {
		return err
	}
	m := ApprovalModel{Page: h.Env.Page(c, "Approval "+name, "approvals"), Detail: recordDetail(pg.Record, h.now()),
		Action:    "/approvals/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/decide",
		CanDecide: pg.CanDecide, CanOverride: pg.CanOverride, Recent: pg.Recent, Deliveries: pg.Deliveries, Notice: notice, Error: errMsg}
	return layout.Render(c, status, ApprovalView(m))
}

// Decide takes the page's form: decision, rationale and, for break-glass,
// override=on.
func (h *Handler) Decide(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	ns, err1 := layout.Param(c, "ns")
	name, err2 := layout.Param(c, "name")
	if err1 != nil || err2 != nil {
		return fiber.ErrBadRequest
	}
	decision := layout.Form(c, "decision")
	err := h.Service.Decide(c.UserContext(), p, ns, name, decision, layout.Form(c, "rationale"), layout.Form(c, "override") == "on")
	if err != nil {
		status := fiber.StatusUnprocessableEntity
		if e, ok := asStatus(err); ok {
			status = e
		}
		return h.show(c, status, "", h.Env.ErrorMessage(c, "decide", err))
	}
	return h.show(c, fiber.StatusOK, "Your decision is recorded.", "")
}

func (h *Handler) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

func recordDetail(r Record, now time.Time) Detail {
	return DetailOf(notifications.LinkView{Approval: r.Approval, Status: r.Status, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt,
		Rationale: r.Rationale, Channel: r.Channel, Phase: r.Phase}, now)
}
