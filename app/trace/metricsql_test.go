package trace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func TestParseMetricQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string
		want  MetricQuery
		err   string
	}{
		{name: "rate by agent", query: "rate(calls[5m]) by (agent)", want: MetricQuery{Func: "rate", Metric: "calls", Window: 5 * time.Minute, By: []string{"agent"}}},
		{name: "matchers", query: `error_rate(calls{agent="support-bot", tool!=stripe.refund}[1h]) by (tool, model)`,
			want: MetricQuery{Func: "error_rate", Metric: "calls", Window: time.Hour, By: []string{"tool", "model"},
				Equal: map[string]string{"agent": "support-bot"}, NotEqual: map[string]string{"tool": "stripe.refund"}}},
		{name: "bare series", query: "cost[1d]", want: MetricQuery{Func: "sum", Metric: "cost", Window: 24 * time.Hour}},
		{name: "percentile", query: "p99(latency[1h]) by (tool)", want: MetricQuery{Func: "p99", Metric: "latency", Window: time.Hour, By: []string{"tool"}}},
		{name: "empty", query: "", err: "empty"},
		{name: "unknown metric", query: "rate(bytes[5m])", err: "unknown metric"},
		{name: "wrong function", query: "p99(cost[1h])", err: "does not apply"},
		{name: "no window", query: "rate(calls)", err: "window"},
		{name: "short window", query: "rate(calls[10s])", err: "between"},
		{name: "bad group", query: "sum(calls[1h]) by (tenant_id)", err: "cannot group"},
		{name: "trailing", query: "sum(calls[1h]) x", err: "unexpected"},
		{name: "unterminated", query: `calls{agent="x}[1h]`, err: "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMetricQuery(tc.query)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.want.Equal == nil && got.Equal != nil && len(got.Equal) == 0 {
				got.Equal, got.NotEqual = nil, nil
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	var h [store.SpanHistBuckets]int64
	h[store.SpanHistBucket(15)] = 90 // (10, 20]
	h[store.SpanHistBucket(150)] = 10
	rows := []store.SpanRollup{
		{Tool: "a", Calls: 100, Errors: 25, LatencySum: 3000, Cost: 2, Tokens: 500, Hist: h},
		{Tool: "b", Calls: 50, Errors: 0, LatencySum: 500, Cost: 1},
	}
	eval := func(q string) map[string]float64 {
		mq, err := ParseMetricQuery(q)
		require.NoError(t, err)
		out := map[string]float64{}
		for _, s := range mq.evaluate(rows) {
			out[s.Metric["tool"]] = s.Value
		}
		return out
	}
	require.Equal(t, map[string]float64{"a": 0.25, "b": 0}, eval("error_rate(calls[1h]) by (tool)"))
	require.Equal(t, map[string]float64{"a": 0.333333, "b": 0.166667}, eval("rate(calls[5m]) by (tool)"), "rounded to 6 decimals")
	require.Equal(t, map[string]float64{"a": 30, "b": 10}, eval("avg(latency[5m]) by (tool)"))
	require.Equal(t, map[string]float64{"a": 2, "b": 1}, eval("sum(cost[5m]) by (tool)"))
	// p50: rank 50 of 90 in (10, 20] → 10 + 10*50/90; p99: rank 99, the
	// 9th of 10 in (100, 200] → 190. b has no histogram: no value.
	p50 := eval("p50(latency[1h]) by (tool)")
	require.InDelta(t, 10+10*50.0/90, p50["a"], 1e-6)
	require.NotContains(t, p50, "b")
	require.InDelta(t, 190, eval("p99(latency[1h]) by (tool)")["a"], 1e-6)
}

func TestParseSelector(t *testing.T) {
	t.Parallel()
	sel, err := ParseSelector("agent=support-bot, tool=stripe.refund,status=error,model!=gpt")
	require.NoError(t, err)
	require.Equal(t, Selector{Agent: "support-bot", Tool: "stripe.refund", NotModel: "gpt", Status: store.SpanStatusError}, sel)
	for _, bad := range []string{"agent", "agent=", "status=maybe", "status!=ok", "execution!=x", "foo=bar", "agent=a,agent=b", "agent=a=b"} {
		_, err := ParseSelector(bad)
		require.Error(t, err, bad)
	}
}
