package trace

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/warden-dev/warden/app/store"
)

// ErrTraceNotFound means no span of the trace is stored in the namespaces
// read.
var ErrTraceNotFound = errors.New("trace not found")

// ReadTrace returns the whole trace id of tenant (spans of namespaces,
// nil for every namespace), oldest span first, as GET /v1/traces/{id}
// answers it. The console reads traces through it too.
func ReadTrace(ctx context.Context, st store.TraceStore, tenant string, namespaces []string, id [16]byte) (*Trace, error) {
	r, err := readTrace(ctx, st, tenant, namespaces, id)
	if err != nil {
		return nil, err
	}
	out := &Trace{TraceID: hex.EncodeToString(id[:]), Truncated: r.truncated}
	if out.Spans, err = views(r.rows, r.resources); err != nil {
		return nil, err
	}
	return out, nil
}

// storedTrace is a trace as read from the store: its spans, oldest first
// and each once, and their resources.
type storedTrace struct {
	rows      []store.Span
	resources map[int64]*tracepb.ResourceSpans
	// truncated: the trace has more than MaxTraceSpans spans.
	truncated bool
}

// readTrace reads the spans of a trace and their resources, in one read
// transaction.
func readTrace(ctx context.Context, st store.TraceStore, tenant string, namespaces []string, id [16]byte) (storedTrace, error) {
	f := store.SpanFilter{Namespaces: namespaces, TraceIDs: [][16]byte{id}, Status: -1, Ascending: true, Limit: MaxTraceSpans + 1}
	rows, raw, err := st.SpanListResources(ctx, tenant, f)
	if err != nil {
		return storedTrace{}, err
	}
	if len(rows) == 0 {
		return storedTrace{}, ErrTraceNotFound
	}
	out := storedTrace{truncated: len(rows) > MaxTraceSpans}
	if out.truncated {
		rows = rows[:MaxTraceSpans]
	}
	out.rows = dedupe(rows)
	if out.resources, err = decodeResources(raw); err != nil {
		return storedTrace{}, err
	}
	return out, nil
}

// TraceIDString is the hex form of a trace id.
func TraceIDString(id [16]byte) string { return hex.EncodeToString(id[:]) }

// decodeResources decodes stored resources.
func decodeResources(raw map[int64][]byte) (map[int64]*tracepb.ResourceSpans, error) {
	out := make(map[int64]*tracepb.ResourceSpans, len(raw))
	for id, b := range raw {
		rs := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(b, rs); err != nil {
			return nil, fmt.Errorf("decode span resource %d: %w", id, err)
		}
		out[id] = rs
	}
	return out, nil
}

// views builds the API form of rows.
func views(rows []store.Span, resources map[int64]*tracepb.ResourceSpans) ([]SpanView, error) {
	out := make([]SpanView, 0, len(rows))
	for i := range rows {
		sp, err := rebuild(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, view(&rows[i], sp, resources[rows[i].Resource]))
	}
	return out, nil
}

// OverviewRow is one agent and tool (or model) of Overview.
type OverviewRow struct {
	Agent, Tool, Model string
	Calls, Errors      int64
	ErrorRate          float64
	P95Ms, AvgMs       float64
	Cost               float64
	Tokens             int64
}

// Overview returns the calls of tenant's namespaces (nil for every one)
// in the window ending at now, per agent, tool and model, most calls
// first: what the console's trace overview shows.
func Overview(ctx context.Context, st store.TraceStore, tenant string, namespaces []string, window time.Duration, now time.Time) ([]OverviewRow, error) {
	from := now.Add(-window).Unix() / 60 * 60
	to := now.Unix()/60*60 + 60
	rows, err := st.SpanRollupList(ctx, tenant, store.RollupFilter{Namespaces: namespaces, Since: from, Until: to, GroupBy: []string{"agent", "tool", "model"}})
	if err != nil {
		return nil, err
	}
	out := make([]OverviewRow, 0, len(rows))
	for _, r := range rows {
		o := OverviewRow{Agent: r.Agent, Tool: r.Tool, Model: r.Model, Calls: r.Calls, Errors: r.Errors, Cost: r.Cost, Tokens: r.Tokens}
		if r.Calls > 0 {
			o.ErrorRate = float64(r.Errors) / float64(r.Calls)
			o.AvgMs = r.LatencySum / float64(r.Calls)
		}
		o.P95Ms, _ = percentile(r.Hist, 0.95)
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OverviewRow) int {
		if a.Calls != b.Calls {
			if a.Calls > b.Calls {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Agent+"\x00"+a.Tool+"\x00"+a.Model, b.Agent+"\x00"+b.Tool+"\x00"+b.Model)
	})
	return out, nil
}
