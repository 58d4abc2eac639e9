package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/trace"
)

// envTraceServer overrides the trace query API's URL.
const envTraceServer = "WARDEN_TRACE_SERVER"

// traceServerFlag is --trace-server of the commands that read traces.
type traceServerFlag struct{ url string }

func (f *traceServerFlag) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "trace-server", "", "URL of the trace query API (default $"+envTraceServer+", else the control plane's host on port 8086)")
}

// traceClient returns a client of the trace query API for the current
// context: --trace-server, $WARDEN_TRACE_SERVER, or the control plane's
// scheme and host with the trace port.
func (a *app) traceClient(f traceServerFlag) (*trace.Client, clientconfig.Resolved, error) {
	_, conn, err := a.connect()
	if err != nil {
		return nil, conn, err
	}
	base := f.url
	if base == "" {
		base, _ = a.env.LookupEnv(envTraceServer)
	}
	if base == "" {
		u, err := url.Parse(conn.Server)
		if err != nil || u.Host == "" {
			return nil, conn, fmt.Errorf("cannot derive the trace service from server %q: give --trace-server", conn.Server)
		}
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(defaultTracePort))
		u.Path = ""
		base = u.String()
	}
	return trace.NewClient(base, conn.Token, nil), conn, nil
}

func newTracesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "traces",
		Aliases: []string{"trace"},
		Short:   "Read traces from the trace service",
		Long: `The trace service stores the spans agents send over OTLP and Warden's own
(the tool gateway's nine steps). 'traces ls' lists traces, newest first, by a
selector over span attributes; 'traces get ID' shows one as a waterfall.`,
	}
	cmd.AddCommand(newTracesGetCmd(a), newTracesLsCmd(a))
	return cmd
}

func newTracesGetCmd(a *app) *cobra.Command {
	var ts traceServerFlag
	var output string
	cmd := &cobra.Command{
		Use:   "get TRACE-ID",
		Short: "Show a trace: every span as a waterfall, or as JSON",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != outTable && output != outJSON {
				return usagef("unknown output format %q: use table or json", output)
			}
			c, conn, err := a.traceClient(ts)
			if err != nil {
				return err
			}
			t, err := c.Trace(cmd.Context(), conn.Namespace, args[0])
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, t)
			}
			printWaterfall(a, t)
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	ts.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", outTable, "output format: table or json")
	return cmd
}

// printWaterfall prints the spans in tree order, indented by depth, with
// their offset from the trace's start.
func printWaterfall(a *app, t *trace.Trace) {
	children := map[string][]int{}
	ids := map[string]bool{}
	for _, s := range t.Spans {
		ids[s.SpanID] = true
	}
	var roots []int
	for i, s := range t.Spans {
		if s.ParentSpanID == "" || !ids[s.ParentSpanID] {
			roots = append(roots, i)
			continue
		}
		children[s.ParentSpanID] = append(children[s.ParentSpanID], i)
	}
	var start time.Time
	if len(t.Spans) > 0 {
		start = t.Spans[0].StartTime
	}
	var rows [][]string
	var walk func(i, depth int)
	walk = func(i, depth int) {
		s := t.Spans[i]
		what := s.Tool
		if what == "" {
			what = s.Model
		}
		rows = append(rows, []string{strings.Repeat("  ", depth) + s.Name, orDash(s.Service), orDash(what),
			"+" + formatDuration(s.StartTime.Sub(start)), formatDuration(time.Duration(s.DurationMs * float64(time.Millisecond))), s.Status.Code})
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	fmt.Fprintf(a.env.Stdout, "Trace %s: %d spans\n", t.TraceID, len(t.Spans))
	(&table{w: a.env.Stdout}).print([]string{"SPAN", "SERVICE", "TOOL/MODEL", "START", "DURATION", "STATUS"}, rows)
	if t.Truncated {
		fmt.Fprintf(a.env.Stderr, "The trace has more spans than one answer carries; the first %d are shown.\n", len(t.Spans))
	}
}

func newTracesLsCmd(a *app) *cobra.Command {
	var ts traceServerFlag
	var o trace.TraceListOptions
	var output string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List traces, newest first",
		Example: `  warden traces ls --since 1h
  warden traces ls --selector agent=support-bot,tool=stripe.refund,status=error`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outTable && output != outJSON {
				return usagef("unknown output format %q: use table or json", output)
			}
			if _, err := trace.ParseSelector(o.Selector); err != nil {
				return usagef("--selector: %s", err.Error())
			}
			if err := checkSince(o.Since); err != nil {
				return err
			}
			c, conn, err := a.traceClient(ts)
			if err != nil {
				return err
			}
			o.Namespace = conn.Namespace
			list, err := c.Traces(cmd.Context(), o)
			if err != nil {
				return err
			}
			if output == outJSON {
				return writeJSON(a.env.Stdout, list)
			}
			if len(list.Items) == 0 {
				fmt.Fprintf(a.env.Stderr, "No traces found in namespace %s.\n", conn.Namespace)
				return nil
			}
			rows := make([][]string, 0, len(list.Items))
			for _, t := range list.Items {
				rows = append(rows, []string{t.TraceID, orDash(t.Root), orDash(t.Service), t.StartTime.Local().Format(time.DateTime),
					formatDuration(time.Duration(t.DurationMs * float64(time.Millisecond))), strconv.Itoa(t.Spans), strconv.Itoa(t.Errors)})
			}
			(&table{w: a.env.Stdout}).print([]string{"TRACE", "ROOT", "SERVICE", "START", "DURATION", "SPANS", "ERRORS"}, rows)
			if list.Metadata.Continue != "" {
				fmt.Fprintf(a.env.Stderr, "More traces: --continue %s\n", list.Metadata.Continue)
			}
			return nil
		},
	}
	a.addNamespaceFlag(cmd)
	ts.add(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.Selector, "selector", "", "span selector: agent=,tool=,model=,service=,name=,execution=,status=ok|error|unset (!= too)")
	f.StringVar(&o.Since, "since", "", "only traces with spans started after this (a duration such as 1h, or an RFC 3339 time)")
	f.IntVar(&o.Limit, "limit", 20, "show at most this many traces")
	f.StringVar(&o.Continue, "continue", "", "the continue token of the previous page")
	f.StringVarP(&output, "output", "o", outTable, "output format: table or json")
	return cmd
}

// metricStats is one row of toolcalls top from the metrics API.
type metricStats struct {
	Tool      string  `json:"tool"`
	Agent     string  `json:"agent,omitempty"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"errorRate"`
	P50Ms     float64 `json:"p50Ms"`
	P95Ms     float64 `json:"p95Ms"`
	Cost      float64 `json:"cost"`
}

// metricsReport is the JSON output of toolcalls top from the metrics API.
type metricsReport struct {
	Namespace string        `json:"namespace"`
	Window    string        `json:"window"`
	By        string        `json:"by"`
	Calls     int64         `json:"calls"`
	Items     []metricStats `json:"items"`
}

// topWindow turns --since into a metrics window (whole minutes, at least
// one).
func topWindow(since string, now time.Time) (string, error) {
	if since == "" {
		return "31d", nil
	}
	d, err := time.ParseDuration(since)
	if err != nil {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			return "", usagef("--since %q is neither a duration nor an RFC 3339 time", since)
		}
		d = now.Sub(t)
	}
	m := max(int((d+time.Minute-1)/time.Minute), 1)
	return strconv.Itoa(m) + "m", nil
}

// topMetrics ranks tools with the trace service's metrics API.
func (a *app) topMetrics(ctx context.Context, o topOptions) error {
	c, conn, err := a.traceClient(o.traceServer)
	if err != nil {
		return err
	}
	window, err := topWindow(o.since, a.env.Now())
	if err != nil {
		return err
	}
	match := ""
	if o.agent != "" {
		match = "{agent=" + strconv.Quote(o.agent) + "}"
	}
	by := "tool"
	if o.perAgent {
		by = "tool, agent"
	}
	series := func(fn, metric string) string { return fn + "(" + metric + match + "[" + window + "]) by (" + by + ")" }
	type key struct{ tool, agent string }
	rows := map[key]*metricStats{}
	var order []key
	for _, q := range []struct {
		query string
		set   func(*metricStats, trace.Sample)
	}{
		{series("sum", "calls"), func(r *metricStats, s trace.Sample) { r.Calls = int64(s.Value) }},
		{series("sum", "errors"), func(r *metricStats, s trace.Sample) { r.Errors = int64(s.Value) }},
		{series("p50", "latency"), func(r *metricStats, s trace.Sample) { r.P50Ms = s.Value }},
		{series("p95", "latency"), func(r *metricStats, s trace.Sample) { r.P95Ms = s.Value }},
		{series("sum", "cost"), func(r *metricStats, s trace.Sample) { r.Cost = s.Value }},
	} {
		res, err := c.Metrics(ctx, conn.Namespace, q.query)
		if err != nil {
			return err
		}
		for _, s := range res.Result {
			k := key{s.Metric["tool"], s.Metric["agent"]}
			if k.tool == "" {
				continue // model calls
			}
			r := rows[k]
			if r == nil {
				r = &metricStats{Tool: k.tool, Agent: k.agent}
				rows[k] = r
				order = append(order, k)
			}
			q.set(r, s)
		}
	}
	var total int64
	items := make([]metricStats, 0, len(order))
	for _, k := range order {
		r := rows[k]
		if r.Calls > 0 {
			r.ErrorRate = float64(r.Errors) / float64(r.Calls)
		}
		total += r.Calls
		items = append(items, *r)
	}
	sortMetricStats(items, o.by)
	if o.limit > 0 && len(items) > o.limit {
		items = items[:o.limit]
	}
	if o.output == outJSON {
		return writeJSON(a.env.Stdout, metricsReport{Namespace: conn.Namespace, Window: window, By: o.by, Calls: total, Items: items})
	}
	if len(items) == 0 {
		fmt.Fprintf(a.env.Stderr, "No tool calls found in namespace %s in the last %s.\n", conn.Namespace, window)
		return nil
	}
	header := []string{"TOOL"}
	if o.perAgent {
		header = append(header, "AGENT")
	}
	header = append(header, "CALLS", "ERRORS", "ERROR-RATE", "P50", "P95", "COST")
	out := make([][]string, 0, len(items))
	for _, r := range items {
		row := []string{r.Tool}
		if o.perAgent {
			row = append(row, r.Agent)
		}
		out = append(out, append(row, strconv.FormatInt(r.Calls, 10), strconv.FormatInt(r.Errors, 10),
			strconv.FormatFloat(100*r.ErrorRate, 'f', 1, 64)+"%", formatMs(r.P50Ms), formatMs(r.P95Ms), strconv.FormatFloat(r.Cost, 'f', 4, 64)))
	}
	(&table{w: a.env.Stdout}).print(header, out)
	return nil
}

func formatMs(ms float64) string {
	return formatDuration(time.Duration(ms * float64(time.Millisecond)))
}

// sortMetricStats orders rows by key, highest first; ties by calls, then
// name.
func sortMetricStats(rows []metricStats, by string) {
	val := func(r metricStats) float64 {
		switch by {
		case byErrorRate:
			return r.ErrorRate
		case byLatency:
			return r.P95Ms
		case byCost:
			return r.Cost
		}
		return float64(r.Calls)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if val(a) != val(b) {
			return val(a) > val(b)
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
