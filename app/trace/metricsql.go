package trace

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/warden-dev/warden/app/store"
)

// MetricQuery is a parsed metrics query, a small PromQL-like language over
// the per-minute call aggregates (docs/trace.md has the grammar):
//
//	rate(calls[5m]) by (agent)
//	error_rate(calls{agent="support-bot"}[1h]) by (tool)
//	p99(latency[1h]) by (tool)
//	sum(cost[1d]) by (model)
//	sum(tokens[1d]) by (agent, model)
type MetricQuery struct {
	// Func is "sum" (also a bare series), "rate", "avg", "error_rate",
	// "p50", "p90", "p95" or "p99".
	Func string
	// Metric is "calls", "errors", "latency", "cost" or "tokens".
	Metric   string
	Equal    map[string]string
	NotEqual map[string]string
	Window   time.Duration
	By       []string
}

// Limits of the metrics language.
const (
	maxQueryBytes = 2048
	minWindow     = time.Minute
	maxWindow     = 31 * 24 * time.Hour
)

// funcMetrics lists the metrics each function applies to.
var funcMetrics = map[string][]string{
	"sum":        {"calls", "errors", "cost", "tokens"},
	"rate":       {"calls", "errors", "cost", "tokens"},
	"avg":        {"latency", "cost", "tokens"},
	"error_rate": {"calls", "errors"},
	"p50":        {"latency"},
	"p90":        {"latency"},
	"p95":        {"latency"},
	"p99":        {"latency"},
}

// Unit returns the unit of the query's values.
func (q MetricQuery) Unit() string {
	switch {
	case q.Func == "error_rate":
		return "ratio"
	case q.Metric == "latency":
		return "ms"
	case q.Func == "rate":
		return q.Metric + "/s"
	case q.Func == "avg":
		return q.Metric + "/call"
	}
	return q.Metric
}

// needs returns the aggregates the query reads (store.RollupFilter.Need).
func (q MetricQuery) needs() []string {
	switch {
	case q.Func == "error_rate":
		return []string{"calls", "errors"}
	case q.Metric == "latency" && q.Func == "avg":
		return []string{"calls", "latency"}
	case q.Metric == "latency":
		return []string{"calls", "hist"}
	}
	return []string{"calls", q.Metric}
}

// lexer splits a query into tokens.
type lexer struct {
	s   string
	pos int
}

func (l *lexer) skip() {
	for l.pos < len(l.s) && unicode.IsSpace(rune(l.s[l.pos])) {
		l.pos++
	}
}

// next returns the next token: an identifier or number run, a quoted
// string (with its quotes), "!=", or one punctuation character; "" at the
// end.
func (l *lexer) next() (string, error) {
	l.skip()
	if l.pos >= len(l.s) {
		return "", nil
	}
	c := l.s[l.pos]
	switch {
	case c == '"':
		end := strings.IndexByte(l.s[l.pos+1:], '"')
		if end < 0 {
			return "", fmt.Errorf("unterminated string at offset %d", l.pos)
		}
		tok := l.s[l.pos : l.pos+end+2]
		l.pos += end + 2
		return tok, nil
	case c == '!' && l.pos+1 < len(l.s) && l.s[l.pos+1] == '=':
		l.pos += 2
		return "!=", nil
	case strings.IndexByte("(){}[],=", c) >= 0:
		l.pos++
		return string(c), nil
	case isWord(c):
		start := l.pos
		for l.pos < len(l.s) && isWord(l.s[l.pos]) {
			l.pos++
		}
		return l.s[start:l.pos], nil
	}
	return "", fmt.Errorf("unexpected character %q at offset %d", c, l.pos)
}

func isWord(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c == '/' || c == ':' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// ParseMetricQuery parses a metrics query.
func ParseMetricQuery(s string) (MetricQuery, error) {
	q := MetricQuery{Func: "sum"}
	if len(s) > maxQueryBytes {
		return q, fmt.Errorf("the query is longer than %d bytes", maxQueryBytes)
	}
	l := &lexer{s: s}
	var toks []string
	for {
		t, err := l.next()
		if err != nil {
			return q, err
		}
		if t == "" {
			break
		}
		toks = append(toks, t)
	}
	p := &parser{toks: toks}
	if err := p.query(&q); err != nil {
		return q, err
	}
	if p.i != len(p.toks) {
		return q, fmt.Errorf("unexpected %q after the query", p.toks[p.i])
	}
	if !slices.Contains(funcMetrics[q.Func], q.Metric) {
		return q, fmt.Errorf("%s() does not apply to %s: it takes %s", q.Func, q.Metric, strings.Join(funcMetrics[q.Func], ", "))
	}
	return q, nil
}

type parser struct {
	toks []string
	i    int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *parser) take() string {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
}

func (p *parser) expect(t string) error {
	if got := p.take(); got != t {
		if got == "" {
			return fmt.Errorf("expected %q, got the end of the query", t)
		}
		return fmt.Errorf("expected %q, got %q", t, got)
	}
	return nil
}

func (p *parser) query(q *MetricQuery) error {
	first := p.take()
	if first == "" {
		return fmt.Errorf("the query is empty: try rate(calls[5m]) by (agent)")
	}
	if _, isFunc := funcMetrics[first]; isFunc && p.peek() == "(" {
		q.Func = first
		p.take()
		if err := p.series(q, p.take()); err != nil {
			return err
		}
		if err := p.expect(")"); err != nil {
			return err
		}
	} else if err := p.series(q, first); err != nil {
		return err
	}
	if p.peek() != "by" {
		return nil
	}
	p.take()
	if err := p.expect("("); err != nil {
		return err
	}
	for {
		d := p.take()
		if !slices.Contains(store.RollupDimensions, d) {
			return fmt.Errorf("cannot group by %q: use agent, tool, model or namespace", d)
		}
		if slices.Contains(q.By, d) {
			return fmt.Errorf("groups by %s twice", d)
		}
		q.By = append(q.By, d)
		switch p.take() {
		case ",":
			continue
		case ")":
			return nil
		default:
			return fmt.Errorf("expected ',' or ')' in by (…)")
		}
	}
}

func (p *parser) series(q *MetricQuery, metric string) error {
	switch metric {
	case "calls", "errors", "latency", "cost", "tokens":
		q.Metric = metric
	case "":
		return fmt.Errorf("expected a metric, got the end of the query")
	default:
		return fmt.Errorf("unknown metric %q: use calls, errors, latency, cost or tokens", metric)
	}
	if p.peek() == "{" {
		p.take()
		q.Equal, q.NotEqual = map[string]string{}, map[string]string{}
		for p.peek() != "}" {
			d := p.take()
			if !slices.Contains(store.RollupDimensions, d) {
				return fmt.Errorf("cannot match on %q: use agent, tool, model or namespace", d)
			}
			op := p.take()
			if op != "=" && op != "!=" {
				return fmt.Errorf("expected = or != after %s", d)
			}
			v := p.take()
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			} else if v == "" || strings.ContainsAny(v, `"(){}[],=`) {
				return fmt.Errorf("expected a value after %s%s", d, op)
			}
			m := q.Equal
			if op == "!=" {
				m = q.NotEqual
			}
			if _, dup := m[d]; dup {
				return fmt.Errorf("matches %s%s twice", d, op)
			}
			m[d] = v
			if p.peek() == "," {
				p.take()
			} else if p.peek() != "}" {
				return fmt.Errorf("expected ',' or '}' in the matchers")
			}
		}
		p.take()
	}
	if err := p.expect("["); err != nil {
		return fmt.Errorf("a series needs a window such as [5m]: %w", err)
	}
	w, err := parseWindow(p.take())
	if err != nil {
		return err
	}
	q.Window = w
	return p.expect("]")
}

// parseWindow parses a window: a whole number and one of s, m, h, d, w.
func parseWindow(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("window %q is not a duration such as 5m, 1h or 1d", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 || n > 1_000_000 {
		return 0, fmt.Errorf("window %q is not a duration such as 5m, 1h or 1d", s)
	}
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, fmt.Errorf("window %q: the unit is one of s, m, h, d, w", s)
	}
	d := time.Duration(n) * unit
	if d < minWindow || d > maxWindow {
		return 0, fmt.Errorf("window %s must be between %s and %s", s, minWindow, maxWindow)
	}
	return d, nil
}

// Sample is one value of a query's result.
type Sample struct {
	// Metric holds the group's dimensions.
	Metric map[string]string `json:"metric"`
	Value  float64           `json:"value"`
	// Calls is the number of calls the value was computed over.
	Calls int64 `json:"calls"`
}

// evaluate computes the query's value for each aggregate row.
func (q MetricQuery) evaluate(rows []store.SpanRollup) []Sample {
	out := make([]Sample, 0, len(rows))
	secs := q.Window.Seconds()
	for i := range rows {
		r := &rows[i]
		var v float64
		var ok = true
		total := map[string]float64{"calls": float64(r.Calls), "errors": float64(r.Errors), "cost": r.Cost, "tokens": float64(r.Tokens)}
		switch q.Func {
		case "sum":
			v = total[q.Metric]
		case "rate":
			v = total[q.Metric] / secs
		case "avg":
			if r.Calls == 0 {
				ok = false
				break
			}
			if q.Metric == "latency" {
				v = r.LatencySum / float64(r.Calls)
			} else {
				v = total[q.Metric] / float64(r.Calls)
			}
		case "error_rate":
			if r.Calls == 0 {
				ok = false
				break
			}
			v = float64(r.Errors) / float64(r.Calls)
		case "p50", "p90", "p95", "p99":
			pct, _ := strconv.Atoi(q.Func[1:])
			v, ok = percentile(r.Hist, float64(pct)/100)
		}
		if !ok {
			continue
		}
		m := map[string]string{}
		for _, d := range q.By {
			switch d {
			case "namespace":
				m[d] = r.Namespace
			case "agent":
				m[d] = r.Agent
			case "tool":
				m[d] = r.Tool
			case "model":
				m[d] = r.Model
			}
		}
		out = append(out, Sample{Metric: m, Value: round(v), Calls: r.Calls})
	}
	slices.SortFunc(out, func(a, b Sample) int {
		switch {
		case a.Value > b.Value:
			return -1
		case a.Value < b.Value:
			return 1
		}
		return strings.Compare(fmt.Sprint(a.Metric), fmt.Sprint(b.Metric))
	})
	return out
}

// percentile estimates the q-quantile of a latency histogram, linearly
// within the bucket it falls in (as Prometheus's histogram_quantile does).
func percentile(h [store.SpanHistBuckets]int64, q float64) (float64, bool) {
	var total int64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var cum float64
	for i, c := range h {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= rank {
			if i == len(h)-1 {
				return store.SpanHistBounds[len(store.SpanHistBounds)-1], true
			}
			lo := 0.0
			if i > 0 {
				lo = store.SpanHistBounds[i-1]
			}
			hi := store.SpanHistBounds[i]
			return lo + (hi-lo)*(rank-cum)/float64(c), true
		}
		cum += float64(c)
	}
	return store.SpanHistBounds[len(store.SpanHistBounds)-1], true
}

func round(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*1e6) / 1e6
}
