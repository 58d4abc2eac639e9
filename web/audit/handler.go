// Package audit is the console screen showing a tenant's audit log with
// filters (actor, verb, namespace) and paging.
package audit

import (
	"context"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	appaudit "github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web/layout"
)

// Service is what the screen needs from the audit log.
type Service interface {
	// Audit lists the caller's tenant's audit records, filtered and paged
	// (store.AuditListParams: Before, NewestFirst, Limit, Actor, Verb,
	// Namespace).
	Audit(ctx context.Context, p auth.Principal, q store.AuditListParams) ([]appaudit.Record, error)
}

// PageSize is how many records one page shows.
const PageSize = 50

// Verbs suggested by the verb filter (a free-text field: services record
// verbs of their own, such as "invite").
var Verbs = []string{"get", "list", "watch", "apply", "patch", "delete", "writestatus"}

// Handler serves the audit screen.
type Handler struct {
	Env     *layout.Env
	Service Service
}

// Get renders the screen, newest record first; htmx requests (filter
// changes, paging) get only the results. ?before=N pages to the records
// older than sequence number N.
func (h *Handler) Get(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	m := Model{
		Page:      h.Env.Page(c, "Audit log", "audit"),
		Actor:     layout.Query(c, "actor"),
		Verb:      layout.Query(c, "verb"),
		Namespace: layout.Query(c, "namespace"),
		Verbs:     Verbs,
	}
	before, _ := strconv.ParseInt(c.Query("before"), 10, 64)
	if before < 0 {
		before = 0
	}
	// One extra record tells whether there is a next (older) page.
	recs, err := h.Service.Audit(c.UserContext(), p, store.AuditListParams{
		Before: before, NewestFirst: true, Limit: PageSize + 1, Actor: m.Actor, Verb: m.Verb, Namespace: m.Namespace,
	})
	if err != nil {
		m.Error = h.Env.ErrorMessage(c, "read the audit log", err)
	}
	more := len(recs) > PageSize
	if more {
		recs = recs[:PageSize]
	}
	for _, r := range recs {
		m.Rows = append(m.Rows, Row{
			Seq: r.Seq, Time: r.Time.UTC().Format("2006-01-02 15:04:05"), Actor: r.Actor, Verb: r.Verb,
			Namespace: r.Namespace, Resource: r.Resource, Outcome: r.Outcome, Policy: r.Policy, Reason: r.Reason,
		})
	}
	if more {
		m.NextPath = m.link(recs[len(recs)-1].Seq)
	}
	if before > 0 {
		m.FirstPath = m.link(0)
	}
	status := fiber.StatusOK
	if layout.IsHTMX(c) {
		return layout.Render(c, status, Results(m))
	}
	return layout.Render(c, status, View(m))
}

func (m Model) link(before int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"actor": m.Actor, "verb": m.Verb, "namespace": m.Namespace} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if len(q) == 0 {
		return "/audit"
	}
	return "/audit?" + q.Encode()
}
