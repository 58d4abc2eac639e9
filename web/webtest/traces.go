package webtest

import (
	"context"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/trace"
)

// FakeTraceID is the one trace the fake stores: a governed tool call.
const FakeTraceID = "5b8efff798038103d269b633813fc60c"

// FakeToolCall is the tool call whose spans the fake trace holds.
const FakeToolCall = "tc-01jd8yq3zq2w6m4v9x0b1c2d3e"

// Overview answers a fixed overview: one agent calling one tool and one
// model, authorized like the real service.
func (f *Fake) Overview(ctx context.Context, p auth.Principal, namespace string, _ time.Duration) ([]trace.OverviewRow, error) {
	if err := f.Authorize(ctx, p, auth.VerbList, namespace, "traces"); err != nil {
		return nil, err
	}
	return []trace.OverviewRow{
		{Agent: "refund-bot", Tool: "stripe.refund", Calls: 40, Errors: 4, ErrorRate: 0.1, P95Ms: 180, AvgMs: 95, Cost: 0.4},
		{Agent: "refund-bot", Model: "gpt-4o", Calls: 12, P95Ms: 900, AvgMs: 700, Cost: 1.25},
	}, nil
}

// Trace answers the fake's one trace: a tool call's span with two of the
// gateway's steps, the second failing.
func (f *Fake) Trace(ctx context.Context, p auth.Principal, namespace string, id [16]byte) (*trace.Trace, error) {
	if err := f.Authorize(ctx, p, auth.VerbGet, namespace, "traces"); err != nil {
		return nil, err
	}
	if trace.TraceIDString(id) != FakeTraceID {
		return nil, trace.ErrTraceNotFound
	}
	t0 := f.now()
	span := func(id, parent, name string, from, to time.Duration, status string) trace.SpanView {
		return trace.SpanView{TraceID: FakeTraceID, SpanID: id, ParentSpanID: parent, Name: name, Kind: "internal",
			StartTime: t0.Add(from), EndTime: t0.Add(to), DurationMs: float64(to-from) / 1e6, Status: trace.SpanStatus{Code: status},
			Namespace: namespace, Service: "warden", Agent: "refund-bot", Tool: "stripe.refund"}
	}
	root := span("0000000000000001", "", "warden.toolcall", 0, 40*time.Millisecond, "error")
	root.Events = []trace.SpanEvent{{Name: "toolCallRequest", Time: t0.Add(3 * time.Millisecond)}}
	root.Attributes = map[string]any{"warden.toolcall": FakeToolCall}
	return &trace.Trace{TraceID: FakeTraceID, Spans: []trace.SpanView{
		root,
		span("0000000000000002", root.SpanID, "warden.step.policy", time.Millisecond, 3*time.Millisecond, "unset"),
		span("0000000000000003", root.SpanID, "warden.step.invoke", 4*time.Millisecond, 39*time.Millisecond, "error"),
	}}, nil
}
