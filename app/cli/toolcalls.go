package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/execution"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
)

// phases are the ToolCall phases, in lifecycle order.
var phases = []string{
	resource.ToolCallPending, resource.ToolCallAwaitingApproval, resource.ToolCallRunning, resource.ToolCallSucceeded,
	resource.ToolCallFailed, resource.ToolCallDenied, resource.ToolCallCancelled, resource.ToolCallExpired,
}

// recordFilters are get's filters for the runtime records the tool
// gateway writes: --agent, --tool, --phase and --since, sent as the list
// endpoint's query filters.
type recordFilters struct {
	agent, tool, phase, since string
}

func (f *recordFilters) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.agent, "agent", "", "toolcalls, approvals and executions: only those of this agent")
	fs.StringVar(&f.tool, "tool", "", "toolcalls and approvals: only those of this tool")
	fs.StringVar(&f.phase, "phase", "", "toolcalls and executions: only those in this phase (Succeeded, Failed, Denied, AwaitingApproval, Waiting, …)")
	fs.StringVar(&f.since, "since", "", "toolcalls, approvals and executions: only those created after this (a duration such as 1h, or an RFC 3339 time)")
}

func (f recordFilters) set() bool {
	return f.agent != "" || f.tool != "" || f.phase != "" || f.since != ""
}

// check validates the filters for kind k and normalizes the phase.
func (f *recordFilters) check(k resource.KindInfo, name string) error {
	if !f.set() {
		return nil
	}
	if k.Kind != resource.KindToolCall && k.Kind != resource.KindApproval && k.Kind != resource.KindExecution {
		return usagef("--agent, --tool, --phase and --since filter toolcalls, approvals and executions only, not %s", k.Plural)
	}
	if name != "" {
		return usagef("a NAME cannot be combined with --agent, --tool, --phase or --since")
	}
	if k.Kind == resource.KindExecution && f.tool != "" {
		return usagef("--tool filters toolcalls and approvals, not executions")
	}
	if f.phase != "" {
		if k.Kind == resource.KindApproval {
			return usagef("--phase filters toolcalls; approvals have a status: warden approvals ls --status")
		}
		known := phases
		if k.Kind == resource.KindExecution {
			known = execution.Phases()
		}
		p, err := parsePhaseOf(f.phase, known)
		if err != nil {
			return err
		}
		f.phase = p
	}
	return checkSince(f.since)
}

// selector returns the filters as selector terms for a watch (except
// --since, which only the initial list honours).
func (f recordFilters) selector() []string {
	var out []string
	for field, v := range map[string]string{"spec.agentRef.name": f.agent, "spec.toolRef.name": f.tool, "status.phase": f.phase} {
		if v != "" {
			out = append(out, field+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// list lists every resource of kind k in ns, through the filtered list
// endpoints for tool calls and approvals.
func (f recordFilters) list(ctx context.Context, c *client.Client, k resource.KindInfo, ns, selector string) (*api.List, error) {
	switch k.Kind {
	case resource.KindToolCall:
		return c.ToolCallListAll(ctx, ns, client.ToolCallListOptions{Agent: f.agent, Tool: f.tool, Phase: f.phase, Since: f.since, Selector: selector})
	case resource.KindApproval:
		return c.ApprovalListAll(ctx, ns, client.ApprovalListOptions{Agent: f.agent, Tool: f.tool, Since: f.since, Selector: selector})
	case resource.KindExecution:
		return c.ExecutionListAll(ctx, ns, client.ExecutionListOptions{Agent: f.agent, Phase: f.phase, Since: f.since, Selector: selector})
	}
	return c.ListAll(ctx, k.Plural, ns, client.ListOptions{Selector: selector})
}

// parsePhaseOf accepts one of phases in any letter case.
func parsePhaseOf(s string, phases []string) (string, error) {
	for _, p := range phases {
		if strings.EqualFold(p, s) {
			return p, nil
		}
	}
	return "", usagef("unknown phase %q: use one of %s", s, strings.Join(phases, ", "))
}

// checkSince accepts what the server's ?since= accepts: a non-negative
// duration or an RFC 3339 time.
func checkSince(s string) error {
	if s == "" {
		return nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return nil
	}
	return usagef("--since %q is neither a duration such as 1h nor an RFC 3339 time", s)
}

// toolCallColumns are the columns of `get toolcalls`.
func toolCallColumns(wide, allNamespaces bool, now time.Time) []column {
	var cols []column
	if allNamespaces {
		cols = append(cols, column{"NAMESPACE", func(o *resource.Object) string { return o.Metadata.Namespace }})
	}
	cols = append(cols,
		column{"NAME", func(o *resource.Object) string { return o.Metadata.Name }},
		column{"AGENT", spec("agentRef", "name")},
		column{"TOOL", spec("toolRef", "name")},
		column{"SIDE-EFFECT", spec("sideEffects", "level")},
		column{"PHASE", status("phase")},
		column{"APPROVAL", callApproval},
		column{"AGE", func(o *resource.Object) string { return age(o.Metadata.CreationTimestamp, now) }},
		column{"DURATION", callDuration},
	)
	if wide {
		cols = append(cols,
			column{"IDEMPOTENCY-KEY", func(o *resource.Object) string {
				return orDash(prefix(text(lookup(o.Spec, "sideEffects", "idempotencyKey")), 12))
			}},
			column{"EXECUTION", spec("executionRef", "name")},
		)
	}
	return cols
}

// callApproval is spec.approval.status, "-" when no approval was needed.
func callApproval(o *resource.Object) string {
	s := text(lookup(o.Spec, "approval", "status"))
	if s == "not_required" {
		return "-"
	}
	return orDash(s)
}

func callDuration(o *resource.Object) string {
	tc, err := client.DecodeToolCall(o)
	if err != nil {
		return "-"
	}
	d, ok := tc.Duration()
	if !ok {
		return "-"
	}
	return formatDuration(d)
}

// formatDuration renders a call's duration: 0.4ms, 12ms, 1.5s, 2m3s.
func formatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		return d.Round(time.Second).String()
	}
}

// prefix shortens s to n characters and an ellipsis.
func prefix(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// describeToolCall prints a tool call for a person: who called what, the
// approval, the timing, input and output as indented JSON, and the
// Approval record when there is one.
func describeToolCall(ctx context.Context, w io.Writer, c *client.Client, o *resource.Object, now time.Time) error {
	tc, err := client.DecodeToolCall(o)
	if err != nil {
		return err
	}
	when := func(ts string) string {
		if ts == "" {
			return ""
		}
		return ts + " (" + age(ts, now) + " ago)"
	}
	approval := "not required"
	if tc.Spec.Approval.Required || (tc.Spec.Approval.Status != "" && tc.Spec.Approval.Status != "not_required") {
		approval = "required, " + orNone(tc.Spec.Approval.Status)
		if tc.Spec.Approval.ApprovedBy != "" {
			approval += " by " + tc.Spec.Approval.ApprovedBy
		}
	}
	duration := ""
	if d, ok := tc.Duration(); ok {
		duration = formatDuration(d)
	}
	fields := [][2]string{
		{"Name", o.Metadata.Name},
		{"Namespace", o.Metadata.Namespace},
		{"Agent", tc.Spec.AgentRef.Name},
		{"Environment", o.Metadata.Annotations[gateway.AnnotationEnvironment]},
		{"Execution", tc.Spec.ExecutionRef.Name},
		{"Tool", tc.Spec.ToolRef.Name},
		{"Side Effect", tc.Spec.SideEffects.Level},
		{"Idempotency Key", tc.Spec.SideEffects.IdempotencyKey},
		{"Approval", approval},
		{"Phase", tc.Status.Phase},
		{"Created", when(o.Metadata.CreationTimestamp)},
		{"Started", when(tc.Status.StartedAt)},
		{"Completed", when(tc.Status.CompletedAt)},
		{"Duration", duration},
	}
	if r := o.Metadata.Annotations[gateway.AnnotationReplayOf]; r != "" {
		fields = append(fields, [2]string{"Replay Of", r})
	}
	for _, f := range fields {
		fmt.Fprintf(w, "%-18s%s\n", f[0]+":", orNone(f[1]))
	}
	for _, sec := range []struct {
		title string
		body  map[string]any
	}{{"Input", tc.Spec.Input}, {"Output", tc.Status.Output}} {
		fmt.Fprintln(w, sec.title+":")
		if sec.body == nil {
			fmt.Fprintln(w, "  <none>")
			continue
		}
		b, err := json.MarshalIndent(sec.body, "  ", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", strings.ToLower(sec.title), err)
		}
		fmt.Fprintln(w, "  "+string(b))
	}

	ap, err := c.ApprovalGet(ctx, o.Metadata.Namespace, client.ApprovalName(o.Metadata.Name))
	switch {
	case client.StatusCode(err) == 404:
		return nil
	case client.StatusCode(err) == 403:
		fmt.Fprintf(w, "Approval %s:\n  <not readable with this credential>\n", client.ApprovalName(o.Metadata.Name))
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(w, "Approval %s:\n", ap.Name())
	for _, f := range [][2]string{
		{"Status", ap.Status.Status},
		{"Reason", ap.Spec.Reason},
		{"Expires", ap.Spec.ExpiresAt},
		{"Decided By", ap.Status.DecidedBy},
		{"Decided At", ap.Status.DecidedAt},
		{"Rationale", ap.Status.Rationale},
	} {
		if f[1] != "" {
			fmt.Fprintf(w, "  %-16s%s\n", f[0]+":", f[1])
		}
	}
	return nil
}

func newToolCallsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "toolcalls",
		Aliases: []string{"toolcall"},
		Short:   "Inspect the tool calls the gateway recorded",
		Long: `The tool gateway records every call as a ToolCall. List them with
'warden get toolcalls --agent A --since 1h', show one with 'warden describe toolcall NAME',
and rank tools with 'warden toolcalls top'.`,
	}
	cmd.AddCommand(newToolCallsTopCmd(a))
	return cmd
}

// Sort keys of toolcalls top.
const (
	byErrorRate = "error_rate"
	byLatency   = "latency"
	byCount     = "count"
	byCalls     = "calls"
	byCost      = "cost"
)

// Sources of toolcalls top.
const (
	sourceMetrics = "metrics"
	sourceRecords = "records"
)

type topOptions struct {
	source      string
	traceServer traceServerFlag
	by          string
	since       string
	agent       string
	limit       int
	perAgent    bool
	output      string
}

// toolStats is one row of toolcalls top.
type toolStats struct {
	Tool      string  `json:"tool"`
	Agent     string  `json:"agent,omitempty"`
	Calls     int     `json:"calls"`
	Succeeded int     `json:"succeeded"`
	Failed    int     `json:"failed"`
	Denied    int     `json:"denied"`
	ErrorRate float64 `json:"errorRate"`
	P50Ms     float64 `json:"p50Ms"`
	P95Ms     float64 `json:"p95Ms"`

	latencies []time.Duration
	p50, p95  time.Duration
}

// topReport is the JSON output of toolcalls top.
type topReport struct {
	Namespace string      `json:"namespace"`
	Since     string      `json:"since,omitempty"`
	By        string      `json:"by"`
	Calls     int         `json:"calls"`
	Items     []toolStats `json:"items"`
}

func newToolCallsTopCmd(a *app) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Rank tools by error rate, latency or number of calls",
		Long: `top ranks the tools of a namespace over the last --since (default 1h), per tool
or, with --per-agent, per agent and tool.

By default (--source metrics) it asks the trace service's metrics API
(GET /v1/metrics, docs/trace.md) for calls, errors, latency percentiles and
cost: every span that names a tool, the gateway's own and those agents send
over OTLP, aggregated per minute, so the answer takes milliseconds however
many calls there were. --by error_rate, latency (P95), cost or calls.

With --source records it lists the ToolCall records the gateway wrote and
aggregates them:

  CALLS       every call, whatever its phase
  SUCCEEDED   calls that ran and succeeded
  FAILED      calls that ran and failed (the tool failed, timed out or was unavailable)
  DENIED      calls refused by policy, a guardian, an approver or a limit; they never ran
  ERROR-RATE  FAILED / (SUCCEEDED + FAILED): the share of executions that failed
  P50, P95    latency of the executions (completedAt - startedAt; time spent waiting
              for an approval is not counted), nearest-rank percentiles

--by error_rate sorts by error rate, --by latency by P95, --by count (or calls) by
CALLS, highest first.`,
		Example: `  warden toolcalls top
  warden toolcalls top --by error_rate --since 24h
  warden toolcalls top --by latency --agent support-bot --per-agent -o json
  warden toolcalls top --by cost --since 24h
  warden toolcalls top --source records --by error_rate`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.source != sourceMetrics && o.source != sourceRecords:
				return usagef("unknown --source %q: use metrics or records", o.source)
			case o.source == sourceRecords && o.by == byCalls:
				o.by = byCount
			case o.source == sourceMetrics && o.by == byCount:
				o.by = byCalls
			}
			switch o.by {
			case byErrorRate, byLatency, byCount, byCalls:
			case byCost:
				if o.source == sourceRecords {
					return usagef("--by cost needs --source metrics: ToolCall records carry no cost")
				}
			default:
				return usagef("unknown --by %q: use error_rate, latency, cost or calls", o.by)
			}
			if o.output != outTable && o.output != outJSON {
				return usagef("unknown output format %q: use table or json", o.output)
			}
			if o.limit < 0 {
				return usagef("--limit must not be negative")
			}
			if err := checkSince(o.since); err != nil {
				return err
			}
			if o.source == sourceMetrics {
				return a.topMetrics(cmd.Context(), o)
			}
			return a.top(cmd.Context(), o)
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&o.source, "source", sourceMetrics, "metrics: the trace service's metrics API; records: the ToolCall records")
	o.traceServer.add(f)
	f.StringVar(&o.by, "by", byCalls, "sort key: error_rate, latency, cost or calls (count)")
	f.StringVar(&o.since, "since", "1h", "only calls created after this (a duration back from now, or an RFC 3339 time; empty: all)")
	f.StringVar(&o.agent, "agent", "", "only the calls of this agent")
	f.IntVar(&o.limit, "limit", 10, "show at most this many rows (0: all)")
	f.BoolVar(&o.perAgent, "per-agent", false, "one row per agent and tool instead of per tool")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table or json")
	return cmd
}

func (a *app) top(ctx context.Context, o topOptions) error {
	c, conn, err := a.connect()
	if err != nil {
		return err
	}
	list, err := c.ToolCallListAll(ctx, conn.Namespace, client.ToolCallListOptions{Agent: o.agent, Since: o.since})
	if err != nil {
		return err
	}
	rows, err := aggregate(list.Items, o.perAgent)
	if err != nil {
		return err
	}
	sortStats(rows, o.by)
	if o.limit > 0 && len(rows) > o.limit {
		rows = rows[:o.limit]
	}
	if o.output == outJSON {
		if rows == nil {
			rows = []toolStats{}
		}
		return writeJSON(a.env.Stdout, topReport{Namespace: conn.Namespace, Since: o.since, By: o.by, Calls: len(list.Items), Items: rows})
	}
	if len(rows) == 0 {
		since := ""
		if o.since != "" {
			since = " since " + o.since
		}
		fmt.Fprintf(a.env.Stderr, "No tool calls found in namespace %s%s.\n", conn.Namespace, since)
		return nil
	}
	header := []string{"TOOL"}
	if o.perAgent {
		header = append(header, "AGENT")
	}
	header = append(header, "CALLS", "SUCCEEDED", "FAILED", "DENIED", "ERROR-RATE", "P50", "P95")
	out := make([][]string, len(rows))
	for i, r := range rows {
		row := []string{r.Tool}
		if o.perAgent {
			row = append(row, r.Agent)
		}
		rate, p50, p95 := "-", "-", "-"
		if r.Succeeded+r.Failed > 0 {
			rate = strconv.FormatFloat(100*r.ErrorRate, 'f', 1, 64) + "%"
		}
		if len(r.latencies) > 0 {
			p50, p95 = formatDuration(r.p50), formatDuration(r.p95)
		}
		out[i] = append(row, strconv.Itoa(r.Calls), strconv.Itoa(r.Succeeded), strconv.Itoa(r.Failed), strconv.Itoa(r.Denied), rate, p50, p95)
	}
	(&table{w: a.env.Stdout}).print(header, out)
	return nil
}

// aggregate counts calls per tool (and agent).
func aggregate(items []*resource.Object, perAgent bool) ([]toolStats, error) {
	idx := map[[2]string]int{}
	var rows []toolStats
	for _, o := range items {
		tc, err := client.DecodeToolCall(o)
		if err != nil {
			return nil, err
		}
		key := [2]string{tc.Spec.ToolRef.Name, ""}
		if perAgent {
			key[1] = tc.Spec.AgentRef.Name
		}
		i, ok := idx[key]
		if !ok {
			i = len(rows)
			idx[key] = i
			rows = append(rows, toolStats{Tool: key[0], Agent: key[1]})
		}
		r := &rows[i]
		r.Calls++
		switch tc.Status.Phase {
		case resource.ToolCallSucceeded:
			r.Succeeded++
		case resource.ToolCallFailed:
			r.Failed++
		case resource.ToolCallDenied:
			r.Denied++
		}
		if d, ok := tc.Duration(); ok && (tc.Status.Phase == resource.ToolCallSucceeded || tc.Status.Phase == resource.ToolCallFailed) {
			r.latencies = append(r.latencies, d)
		}
	}
	for i := range rows {
		r := &rows[i]
		if n := r.Succeeded + r.Failed; n > 0 {
			r.ErrorRate = float64(r.Failed) / float64(n)
		}
		if len(r.latencies) > 0 {
			sort.Slice(r.latencies, func(x, y int) bool { return r.latencies[x] < r.latencies[y] })
			r.p50, r.p95 = percentile(r.latencies, 50), percentile(r.latencies, 95)
			r.P50Ms, r.P95Ms = ms(r.p50), ms(r.p95)
		}
	}
	return rows, nil
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// sortStats orders rows by key, highest first; ties by calls, then name.
func sortStats(rows []toolStats, by string) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch by {
		case byErrorRate:
			if a.ErrorRate != b.ErrorRate {
				return a.ErrorRate > b.ErrorRate
			}
		case byLatency:
			if a.p95 != b.p95 {
				return a.p95 > b.p95
			}
			if a.p50 != b.p50 {
				return a.p50 > b.p50
			}
		}
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		return a.Agent < b.Agent
	})
}
