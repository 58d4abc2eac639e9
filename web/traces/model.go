package traces

import (
	"net/url"

	"github.com/warden-dev/warden/web/layout"
)

// OverviewModel is the trace overview: calls, errors, latency and cost per
// agent and tool (or model), and a form to open a trace.
type OverviewModel struct {
	Page      layout.Page
	Namespace string
	// Window is the period shown, such as "1h"; Windows are the choices.
	Window  string
	Windows []string
	Rows    []OverviewRow
	Error   string
}

// OverviewRow is one agent and tool or model.
type OverviewRow struct {
	Agent, Target, Kind string
	Calls, Errors       string
	ErrorRate           string
	P95, Avg            string
	Cost                string
	// Failing marks a row with errors.
	Failing bool
}

// TraceModel is the waterfall of one trace.
type TraceModel struct {
	Page      layout.Page
	TraceID   string
	Namespace string
	Summary   string
	Spans     []SpanRow
	// ToolCalls are the tool calls whose spans the trace holds.
	ToolCalls []ToolCallLink
	Truncated bool
	Error     string
}

// ToolCallLink is a tool call a trace's spans name (warden.toolcall).
type ToolCallLink struct {
	Namespace, Name string
}

// Href is the call's page in the console.
func (l ToolCallLink) Href() string {
	return "/toolcalls/" + url.PathEscape(l.Namespace) + "/" + url.PathEscape(l.Name)
}

// SpanRow is one span of the waterfall, in tree order.
type SpanRow struct {
	// Indent is the depth under the root, in steps.
	Indent                 int
	Name, Service, Subject string
	Start, Duration        string
	Status                 string
	Failed                 bool
	// BarX and BarWidth place the span's bar on a 0-1000 scale of the
	// trace's duration.
	BarX, BarWidth string
	// Events lists the span's events ("toolCallRequest +1.2ms").
	Events []string
}
