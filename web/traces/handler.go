// Package traces is the console's trace screens: an overview of calls,
// errors, latency and cost per agent and tool, and a trace as a span
// waterfall (the gateway's nine steps, model calls, approval waits).
package traces

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/trace"
	"github.com/warden-dev/warden/web/layout"
)

// Service is what the screens need from the trace store; it authorizes
// the principal for the namespace.
type Service interface {
	Overview(ctx context.Context, p auth.Principal, namespace string, window time.Duration) ([]trace.OverviewRow, error)
	Trace(ctx context.Context, p auth.Principal, namespace string, id [16]byte) (*trace.Trace, error)
}

// Windows are the periods the overview offers.
var Windows = []string{"15m", "1h", "24h", "168h"}

// Handler serves the trace screens.
type Handler struct {
	Env     *layout.Env
	Service Service
}

func namespaceOf(c *fiber.Ctx) string {
	if ns := layout.Query(c, "namespace"); ns != "" {
		return ns
	}
	return "default"
}

// Overview renders /traces.
func (h *Handler) Overview(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	m := OverviewModel{Page: h.Env.Page(c, "Traces", "traces"), Namespace: namespaceOf(c), Window: layout.Query(c, "window"), Windows: Windows}
	if m.Window == "" {
		m.Window = "1h"
	}
	window, err := time.ParseDuration(m.Window)
	if err != nil || window <= 0 || window > 31*24*time.Hour {
		m.Error, window, m.Window = "The period must be a duration such as 1h.", time.Hour, "1h"
	}
	rows, err := h.Service.Overview(c.UserContext(), p, m.Namespace, window)
	if err != nil {
		m.Error = h.Env.ErrorMessage(c, "read the calls", err)
	}
	for _, r := range rows {
		target, kind := r.Tool, "tool"
		if target == "" {
			target, kind = r.Model, "model"
		}
		m.Rows = append(m.Rows, OverviewRow{Agent: orDash(r.Agent), Target: orDash(target), Kind: kind,
			Calls: strconv.FormatInt(r.Calls, 10), Errors: strconv.FormatInt(r.Errors, 10),
			ErrorRate: strconv.FormatFloat(100*r.ErrorRate, 'f', 1, 64) + "%", P95: ms(r.P95Ms), Avg: ms(r.AvgMs),
			Cost: strconv.FormatFloat(r.Cost, 'f', 4, 64), Failing: r.Errors > 0})
	}
	return layout.Render(c, fiber.StatusOK, Overview(m))
}

// Trace renders /traces/:id, or redirects the overview's "open a trace"
// form (?id=) there.
func (h *Handler) Trace(c *fiber.Ctx) error {
	p, _ := h.Env.Principal(c)
	raw, err := layout.Param(c, "id")
	if err != nil {
		raw = ""
	}
	m := TraceModel{Page: h.Env.Page(c, "Trace", "traces"), TraceID: strings.ToLower(raw), Namespace: namespaceOf(c)}
	var id [16]byte
	b, err := hex.DecodeString(m.TraceID)
	if err != nil || len(b) != 16 {
		m.Error = "A trace id is 32 hexadecimal digits."
		return layout.Render(c, fiber.StatusBadRequest, TraceView(m))
	}
	copy(id[:], b)
	t, err := h.Service.Trace(c.UserContext(), p, m.Namespace, id)
	switch {
	case errors.Is(err, trace.ErrTraceNotFound):
		m.Error = fmt.Sprintf("No trace %s in namespace %s.", m.TraceID, m.Namespace)
		return layout.Render(c, fiber.StatusNotFound, TraceView(m))
	case err != nil:
		m.Error = h.Env.ErrorMessage(c, "read the trace", err)
		return layout.Render(c, fiber.StatusOK, TraceView(m))
	}
	m.Spans, m.Summary = waterfall(t)
	m.ToolCalls = toolCalls(t)
	m.Truncated = t.Truncated
	return layout.Render(c, fiber.StatusOK, TraceView(m))
}

// Open redirects the overview's form to the trace's page.
func (h *Handler) Open(c *fiber.Ctx) error {
	id := strings.ToLower(layout.Query(c, "id"))
	return c.Redirect("/traces/"+url.PathEscape(id)+"?namespace="+url.QueryEscape(namespaceOf(c)), fiber.StatusSeeOther)
}

// waterfall orders spans as a tree and places each on the trace's time
// line.
func waterfall(t *trace.Trace) ([]SpanRow, string) {
	if len(t.Spans) == 0 {
		return nil, ""
	}
	start, end := t.Spans[0].StartTime, t.Spans[0].EndTime
	ids := map[string]bool{}
	for _, s := range t.Spans {
		ids[s.SpanID] = true
		if s.StartTime.Before(start) {
			start = s.StartTime
		}
		if s.EndTime.After(end) {
			end = s.EndTime
		}
	}
	total := end.Sub(start)
	children := map[string][]int{}
	var roots []int
	for i, s := range t.Spans {
		if s.ParentSpanID == "" || !ids[s.ParentSpanID] {
			roots = append(roots, i)
		} else {
			children[s.ParentSpanID] = append(children[s.ParentSpanID], i)
		}
	}
	scale := func(d time.Duration) int {
		if total <= 0 {
			return 0
		}
		return int(1000 * float64(d) / float64(total))
	}
	var out []SpanRow
	errs := 0
	var walk func(i, depth int)
	walk = func(i, depth int) {
		s := t.Spans[i]
		subject := s.Tool
		if subject == "" {
			subject = s.Model
		}
		x := scale(s.StartTime.Sub(start))
		w := max(scale(s.EndTime.Sub(s.StartTime)), 2)
		row := SpanRow{Indent: min(depth, 12), Name: s.Name, Service: orDash(s.Service), Subject: orDash(subject),
			Start: "+" + ms(float64(s.StartTime.Sub(start))/1e6), Duration: ms(s.DurationMs), Status: s.Status.Code,
			Failed: s.Status.Code == "error", BarX: strconv.Itoa(min(x, 998)), BarWidth: strconv.Itoa(min(w, 1000-min(x, 998)))}
		if row.Failed {
			errs++
		}
		for _, e := range s.Events {
			row.Events = append(row.Events, e.Name+" +"+ms(float64(e.Time.Sub(start))/1e6))
		}
		out = append(out, row)
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out, fmt.Sprintf("%s, %s, %d with errors, started %s UTC", layout.Count(len(t.Spans), "span", "spans"), ms(float64(total)/1e6), errs,
		start.UTC().Format("2006-01-02 15:04:05"))
}

// AttrToolCall is the span attribute by which the tool gateway's spans
// name their ToolCall record.
const AttrToolCall = "warden.toolcall"

// toolCalls lists the tool calls the trace's spans name, in the order
// their first span started, each once.
func toolCalls(t *trace.Trace) []ToolCallLink {
	var out []ToolCallLink
	seen := map[ToolCallLink]bool{}
	for _, s := range t.Spans {
		name, _ := s.Attributes[AttrToolCall].(string)
		l := ToolCallLink{Namespace: s.Namespace, Name: name}
		if name == "" || l.Namespace == "" || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

func ms(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + "s"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
