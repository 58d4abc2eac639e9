package storetest

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

// traceTests are the conformance tests of store.TraceStore.
var traceTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"SpanWriteList", testSpanWriteList},
	{"SpanFilters", testSpanFilters},
	{"SpanRollups", testSpanRollups},
	{"SpanRollupsHours", testSpanRollupsHours},
	{"SpanIsolation", testSpanIsolation},
	{"SpanExpire", testSpanExpire},
	{"SpanExpireEach", testSpanExpireEach},
	{"SpanBlocksPaged", testSpanBlocksPaged},
	{"SpanBlocksLarge", testSpanBlocksLarge},
	{"OCSFEvents", testOCSFEvents},
}

// NewSpan returns a span of trace with a random span id, starting at start
// and lasting d.
func NewSpan(trace [16]byte, parent [8]byte, name string, start time.Time, d time.Duration) store.Span {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return store.Span{Namespace: "default", TraceID: trace, SpanID: id, ParentID: parent, Name: name, Kind: 2,
		Start: start.UnixNano(), End: start.Add(d).UnixNano(), Resource: 1, Data: []byte{0x0a, 0x01, 'x'}}
}

// NewTraceID returns a random trace id.
func NewTraceID() [16]byte {
	var id [16]byte
	_, _ = rand.Read(id[:])
	return id
}

func testSpanWriteList(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	trace := NewTraceID()
	root := NewSpan(trace, [8]byte{}, "agent.run", base, time.Second)
	root.Service, root.Agent = "support-bot", "support-bot"
	// 150 children: more than one INSERT statement's rows.
	b := &store.SpanBatch{Spans: []store.Span{root}, Resources: []store.SpanResource{{ID: 1, Data: []byte("resource")}}}
	for i := range 150 {
		c := NewSpan(trace, root.SpanID, "step", base.Add(time.Duration(i+1)*time.Millisecond), time.Millisecond)
		c.Tool, c.Cost, c.Tokens = "crm.refund", 0.5, 7
		if i == 3 {
			c.Status = store.SpanStatusError
		}
		b.Spans = append(b.Spans, c)
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, b))
	// A retried export stores the resource again: kept once.
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Resources: b.Resources}))

	got, err := s.SpanList(ctx, tenant, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1, Ascending: true})
	require.NoError(t, err)
	require.Len(t, got, 151)
	require.Equal(t, root, got[0], "the root comes back whole and first")
	require.Equal(t, "crm.refund", got[1].Tool)
	require.Equal(t, 0.5, got[1].Cost)
	require.Equal(t, int64(7), got[1].Tokens)
	require.Equal(t, root.SpanID, got[1].ParentID)

	res, err := s.SpanResourceGet(ctx, tenant, []int64{1, 2})
	require.NoError(t, err)
	require.Equal(t, map[int64][]byte{1: []byte("resource")}, res)

	// A trace read: the same spans and the resources they name, at once.
	both, res, err := s.SpanListResources(ctx, tenant, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1, Ascending: true})
	require.NoError(t, err)
	require.Equal(t, got, both)
	require.Equal(t, map[int64][]byte{1: []byte("resource")}, res)
	none, res, err := s.SpanListResources(ctx, tenant, store.SpanFilter{TraceIDs: [][16]byte{NewTraceID()}, Status: -1})
	require.NoError(t, err)
	require.Empty(t, none)
	require.Empty(t, res)
	other, res, err := s.SpanListResources(ctx, NewTenant(), store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1})
	require.NoError(t, err)
	require.Empty(t, other, "another tenant reads nothing")
	require.Empty(t, res)

	sums, err := s.TraceSummaryList(ctx, tenant, nil, [][16]byte{trace, NewTraceID()})
	require.NoError(t, err)
	require.Len(t, sums, 1)
	require.Equal(t, store.TraceSummary{TraceID: trace, Spans: 151, Errors: 1, Start: root.Start, End: root.End, Root: "agent.run", Service: "support-bot"}, sums[0])
}

func testSpanFilters(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	var spans []store.Span
	for i := range 10 {
		sp := NewSpan(NewTraceID(), [8]byte{}, "call", base.Add(time.Duration(i)*time.Second), time.Millisecond)
		sp.Agent = []string{"a", "b"}[i%2]
		sp.Tool = []string{"x.get", "y.put", "z.del"}[i%3]
		sp.Model = "gpt"
		if i%5 == 0 {
			sp.Status = store.SpanStatusError
		}
		if i < 4 {
			sp.Execution = "exec-1"
		}
		if i == 9 {
			sp.Namespace = "other"
		}
		spans = append(spans, sp)
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: spans}))
	tests := []struct {
		name string
		f    store.SpanFilter
		want []int
	}{
		{"all newest first", store.SpanFilter{Status: -1}, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"agent", store.SpanFilter{Agent: "a", Status: -1}, []int{8, 6, 4, 2, 0}},
		{"agent and tool", store.SpanFilter{Agent: "a", Tool: "x.get", Status: -1}, []int{6, 0}},
		{"not tool", store.SpanFilter{NotTool: "x.get", Agent: "b", Status: -1}, []int{7, 5, 1}},
		{"errors", store.SpanFilter{Status: store.SpanStatusError}, []int{5, 0}},
		{"execution", store.SpanFilter{Execution: "exec-1", Status: -1}, []int{3, 2, 1, 0}},
		{"time range", store.SpanFilter{Since: base.Add(2 * time.Second).UnixNano(), Until: base.Add(5 * time.Second).UnixNano(), Status: -1}, []int{4, 3, 2}},
		{"namespaces", store.SpanFilter{Namespaces: []string{"other"}, Status: -1}, []int{9}},
		{"no namespaces", store.SpanFilter{Namespaces: []string{}, Status: -1}, nil},
		{"limit", store.SpanFilter{Limit: 3, Status: -1}, []int{9, 8, 7}},
		{"after", store.SpanFilter{After: &store.SpanCursor{Start: spans[7].Start, SpanID: spans[7].SpanID}, Limit: 2, Status: -1}, []int{6, 5}},
		{"model", store.SpanFilter{Model: "gpt", Tool: "z.del", Status: -1}, []int{8, 5, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.SpanList(ctx, tenant, tc.f)
			require.NoError(t, err)
			var idx []int
			for _, g := range got {
				for i, sp := range spans {
					if sp.SpanID == g.SpanID {
						idx = append(idx, i)
					}
				}
			}
			require.Equal(t, tc.want, idx)
		})
	}
}

func testSpanRollups(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	minute := int64(1_800_000_000 / 60 * 60)
	r := func(ns, agent, tool, model string, m int64, calls, errs int64) store.SpanRollup {
		out := store.SpanRollup{Namespace: ns, Agent: agent, Tool: tool, Model: model, Minute: m, Calls: calls, Errors: errs,
			LatencySum: float64(calls) * 10, Cost: float64(calls) / 100, Tokens: calls * 3}
		out.Hist[store.SpanHistBucket(10)] = calls
		return out
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Rollups: []store.SpanRollup{
		r("default", "a", "x.get", "", minute, 10, 1),
		r("default", "b", "x.get", "", minute, 5, 5),
		r("default", "a", "", "gpt", minute+60, 4, 0),
		r("other", "a", "y.put", "", minute, 2, 0),
	}}))
	// A second write adds to the first.
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Rollups: []store.SpanRollup{r("default", "a", "x.get", "", minute, 10, 1)}}))

	byTool, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: minute, Until: minute + 120, GroupBy: []string{"tool"}, ToolsOnly: true})
	require.NoError(t, err)
	got := map[string]store.SpanRollup{}
	for _, x := range byTool {
		got[x.Tool] = x
	}
	require.Len(t, got, 2)
	require.Equal(t, int64(25), got["x.get"].Calls)
	require.Equal(t, int64(7), got["x.get"].Errors)
	require.Equal(t, int64(25), got["x.get"].Hist[store.SpanHistBucket(10)])
	require.InDelta(t, 0.25, got["x.get"].Cost, 1e-9)
	require.Equal(t, int64(75), got["x.get"].Tokens)

	total, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: minute, Until: minute + 120, Namespaces: []string{"default"},
		Equal: map[string]string{"agent": "a"}})
	require.NoError(t, err)
	require.Len(t, total, 1)
	require.Equal(t, int64(24), total[0].Calls)

	none, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: minute + 600, Until: minute + 1200})
	require.NoError(t, err)
	require.Empty(t, none)

	_, err = s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: minute, Until: minute + 1, GroupBy: []string{"tenant_id"}})
	require.Error(t, err, "only the documented dimensions group")
}

func testSpanIsolation(t *testing.T, s store.Store) {
	ctx, a, b := context.Background(), NewTenant(), NewTenant()
	trace := NewTraceID()
	sp := NewSpan(trace, [8]byte{}, "secret", time.Unix(1_800_000_000, 0), time.Second)
	require.NoError(t, s.SpanWrite(ctx, a, &store.SpanBatch{Spans: []store.Span{sp}, Resources: []store.SpanResource{{ID: 1, Data: []byte("r")}},
		Rollups: []store.SpanRollup{{Namespace: "default", Tool: "x.get", Minute: 60, Calls: 1}},
		Events:  []store.OCSFEvent{{Namespace: "default", Time: 1, ClassUID: 6003, Data: []byte("{}")}}}))
	got, err := s.SpanList(ctx, b, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1})
	require.NoError(t, err)
	require.Empty(t, got)
	res, err := s.SpanResourceGet(ctx, b, []int64{1})
	require.NoError(t, err)
	require.Empty(t, res)
	sums, err := s.TraceSummaryList(ctx, b, nil, [][16]byte{trace})
	require.NoError(t, err)
	require.Empty(t, sums)
	rs, err := s.SpanRollupList(ctx, b, store.RollupFilter{Since: 0, Until: 120})
	require.NoError(t, err)
	require.Empty(t, rs)
	evs, err := s.OCSFEventList(ctx, b, store.OCSFFilter{})
	require.NoError(t, err)
	require.Empty(t, evs)
	far := time.Unix(1_900_000_000, 0)
	n, err := s.SpanExpire(ctx, b, store.TraceCutoffs{Spans: far, Metrics: far, OCSFEvents: far}, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	got, err = s.SpanList(ctx, a, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1})
	require.NoError(t, err)
	require.Len(t, got, 1, "the other tenant's expiry deleted nothing")
	require.ErrorIs(t, s.SpanWrite(ctx, "", &store.SpanBatch{}), store.ErrNoTenant)
}

func testSpanExpire(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	var spans []store.Span
	for i := range 25 {
		spans = append(spans, NewSpan(NewTraceID(), [8]byte{}, "s", base.Add(time.Duration(i)*time.Minute), time.Millisecond))
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: spans, Resources: []store.SpanResource{{ID: 1, Data: []byte("r")}},
		Rollups: []store.SpanRollup{{Namespace: "default", Tool: "t", Minute: base.Unix() / 60 * 60, Calls: 1}},
		Events:  []store.OCSFEvent{{Namespace: "default", Time: base.UnixMilli(), ClassUID: 6003, Data: []byte("{}")}}}))
	cut := base.Add(20 * time.Minute)
	total := 0
	for {
		n, err := s.SpanExpire(ctx, tenant, store.TraceCutoffs{Spans: cut, Metrics: cut, OCSFEvents: cut}, 7)
		require.NoError(t, err)
		require.LessOrEqual(t, n, 7)
		total += n
		if n < 7 {
			break
		}
	}
	require.Equal(t, 20, total)
	left, err := s.SpanList(ctx, tenant, store.SpanFilter{Status: -1})
	require.NoError(t, err)
	require.Len(t, left, 5)
	require.Equal(t, spans[24].SpanID, left[0].SpanID)
	rs, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: 0, Until: cut.Unix()})
	require.NoError(t, err)
	require.Empty(t, rs)
	evs, err := s.OCSFEventList(ctx, tenant, store.OCSFFilter{})
	require.NoError(t, err)
	require.Empty(t, evs)
	res, err := s.SpanResourceGet(ctx, tenant, []int64{1})
	require.NoError(t, err)
	require.Len(t, res, 1, "the resource is still used by a span after the cut")
}

func testOCSFEvents(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	var evs []store.OCSFEvent
	for i := range 5 {
		evs = append(evs, store.OCSFEvent{Namespace: "default", Time: int64(1000 + i), ClassUID: 6003 + i%2, ActivityID: 1, SeverityID: 1, StatusID: 1,
			Actor: "alice", Operation: "PutObject", Data: []byte(`{"class_uid":6003}`)})
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Events: evs}))
	got, err := s.OCSFEventList(ctx, tenant, store.OCSFFilter{ClassUID: 6003})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, int64(1004), got[0].Time, "newest first")
	require.Equal(t, "PutObject", got[0].Operation)
	page, err := s.OCSFEventList(ctx, tenant, store.OCSFFilter{Before: got[0].ID, Limit: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, int64(1003), page[0].Time)
}

// testSpanRollupsHours reads the whole hours of a range from hour buckets
// and its edges from minute buckets, counting every call once.
func testSpanRollupsHours(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	h := int64(1_800_000_000) / 3600 * 3600
	r := func(width, start, calls int64) store.SpanRollup {
		return store.SpanRollup{Namespace: "default", Tool: "x.get", Width: width, Minute: start, Calls: calls, Errors: calls}
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Rollups: []store.SpanRollup{
		r(store.RollupHour, h-3600, 1000),                                  // an hour only partly inside: its minutes count
		r(store.RollupMinute, h-300, 1),                                    // inside, before the whole hour
		r(store.RollupMinute, h-1200, 500),                                 // before the range
		r(store.RollupHour, h, 100),                                        // the whole hour inside
		r(store.RollupMinute, h+60, 60), r(store.RollupMinute, h+1800, 40), // its minutes: not counted again
		r(store.RollupMinute, h+3600+300, 2), // inside, after the whole hour
		r(store.RollupHour, h+3600, 2),       // an hour only partly inside
	}}))
	got, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: h - 600, Until: h + 3600 + 600, Need: []string{"calls"}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(103), got[0].Calls)
	require.Zero(t, got[0].Errors, "errors were not asked for")
	// Within one hour: minutes only.
	got, err = s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: h, Until: h + 1800, GroupBy: []string{"tool"}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(60), got[0].Calls)
	require.Equal(t, int64(60), got[0].Errors)
}

// testSpanExpireEach applies each cut-off to its own table only.
func testSpanExpireEach(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	sp := NewSpan(NewTraceID(), [8]byte{}, "s", base, time.Millisecond)
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: []store.Span{sp},
		Rollups: []store.SpanRollup{{Namespace: "default", Tool: "t", Minute: base.Unix() / 60 * 60, Calls: 1}},
		Events:  []store.OCSFEvent{{Namespace: "default", Time: base.UnixMilli(), ClassUID: 6003, Data: []byte("{}")}}}))
	later := base.Add(time.Hour)
	counts := func() (spans, rollups, events int) {
		got, err := s.SpanList(ctx, tenant, store.SpanFilter{Status: -1})
		require.NoError(t, err)
		rs, err := s.SpanRollupList(ctx, tenant, store.RollupFilter{Since: 0, Until: later.Unix()})
		require.NoError(t, err)
		evs, err := s.OCSFEventList(ctx, tenant, store.OCSFFilter{})
		require.NoError(t, err)
		return len(got), len(rs), len(evs)
	}
	_, err := s.SpanExpire(ctx, tenant, store.TraceCutoffs{Metrics: later}, 100)
	require.NoError(t, err)
	sp1, r1, e1 := counts()
	require.Equal(t, []int{1, 0, 1}, []int{sp1, r1, e1}, "only the rollups went")
	_, err = s.SpanExpire(ctx, tenant, store.TraceCutoffs{OCSFEvents: later}, 100)
	require.NoError(t, err)
	sp1, r1, e1 = counts()
	require.Equal(t, []int{1, 0, 0}, []int{sp1, r1, e1}, "then the events")
	_, err = s.SpanExpire(ctx, tenant, store.TraceCutoffs{Spans: base}, 100)
	require.NoError(t, err)
	sp1, _, _ = counts()
	require.Equal(t, 1, sp1, "a span that started at the cut-off stays")
	_, err = s.SpanExpire(ctx, tenant, store.TraceCutoffs{Spans: later}, 100)
	require.NoError(t, err)
	sp1, _, _ = counts()
	require.Zero(t, sp1)
}

// testSpanBlocksPaged lists spans spread over more blocks than one page
// of the block query reads, with and without index filters, and checks
// every page against the spans written.
func testSpanBlocksPaged(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	var all []store.Span
	// 300 traces of 3 spans in 3 writes: 900 spans in 300 blocks, the
	// traces of a write overlapping in time.
	for w := range 3 {
		var batch []store.Span
		for tr := range 100 {
			trace := NewTraceID()
			for i := range 3 {
				at := base.Add(time.Duration(w*100+tr)*time.Second + time.Duration((i*37+tr)%90)*time.Second)
				sp := NewSpan(trace, [8]byte{}, "call", at, time.Millisecond)
				sp.Agent = []string{"a", "b", "c"}[(tr+i)%3]
				sp.Tool = []string{"x.get", "y.put"}[i%2]
				batch = append(batch, sp)
			}
		}
		require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: batch}))
		all = append(all, batch...)
	}
	for _, tc := range []struct {
		name string
		f    store.SpanFilter
	}{
		{"all", store.SpanFilter{Status: -1}},
		{"agent", store.SpanFilter{Agent: "b", Status: -1}},
		{"agent and tool", store.SpanFilter{Agent: "a", Tool: "y.put", Status: -1}},
		{"since", store.SpanFilter{Since: base.Add(150 * time.Second).UnixNano(), Status: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []store.Span
			for i := range all {
				if tc.f.Match(&all[i]) {
					want = append(want, all[i])
				}
			}
			tc.f.SortSpans(want)
			// Page through 40 at a time, as the list API does.
			var got []store.Span
			f := tc.f
			f.Limit = 40
			for {
				page, err := s.SpanList(ctx, tenant, f)
				require.NoError(t, err)
				got = append(got, page...)
				if len(page) < f.Limit {
					break
				}
				last := page[len(page)-1]
				f.After = &store.SpanCursor{Start: last.Start, SpanID: last.SpanID}
			}
			require.Equal(t, len(want), len(got))
			for i := range want {
				require.Equal(t, want[i].SpanID, got[i].SpanID, "span %d", i)
			}
		})
	}
}

// testSpanBlocksLarge stores a trace larger than a block holds and reads
// it back whole, oldest first.
func testSpanBlocksLarge(t *testing.T, s store.Store) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	trace := NewTraceID()
	var spans []store.Span
	for i := range store.MaxBlockSpans + 10 {
		sp := NewSpan(trace, [8]byte{}, "step", base.Add(time.Duration(store.MaxBlockSpans-i)*time.Millisecond), time.Millisecond)
		sp.Execution = "exec-large"
		spans = append(spans, sp)
	}
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: spans}))
	got, err := s.SpanList(ctx, tenant, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1, Ascending: true})
	require.NoError(t, err)
	require.Len(t, got, len(spans))
	for i := 1; i < len(got); i++ {
		require.LessOrEqual(t, got[i-1].Start, got[i].Start, "oldest first")
	}
	byExec, err := s.SpanList(ctx, tenant, store.SpanFilter{Execution: "exec-large", Status: -1, Limit: 5})
	require.NoError(t, err)
	require.Len(t, byExec, 5)
	require.Equal(t, spans[0].SpanID, byExec[0].SpanID, "newest first")
	sums, err := s.TraceSummaryList(ctx, tenant, nil, [][16]byte{trace})
	require.NoError(t, err)
	require.Len(t, sums, 1)
	require.Equal(t, len(spans), sums[0].Spans)
}

// LegacySpans checks that spans of the per-span table of earlier versions
// (which insert stores, as those versions did) are read beside blocks and
// expire like them. Drivers call it with their own insert.
func LegacySpans(t *testing.T, s store.Store, insert func(tenant string, sp store.Span)) {
	ctx, tenant := context.Background(), NewTenant()
	base := time.Unix(1_800_000_000, 0)
	trace := NewTraceID()
	old := NewSpan(trace, [8]byte{}, "agent.run", base, time.Second)
	old.Agent, old.Service = "support-bot", "agents"
	insert(tenant, old)
	child := NewSpan(trace, old.SpanID, "execute_tool crm.get", base.Add(time.Millisecond), time.Millisecond)
	child.Agent, child.Tool = "support-bot", "crm.get"
	require.NoError(t, s.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: []store.Span{child}}))

	got, err := s.SpanList(ctx, tenant, store.SpanFilter{TraceIDs: [][16]byte{trace}, Status: -1, Ascending: true})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, old, got[0], "the old row comes back whole, first")
	require.Equal(t, child.SpanID, got[1].SpanID)
	byAgent, err := s.SpanList(ctx, tenant, store.SpanFilter{Agent: "support-bot", Status: -1, Limit: 1})
	require.NoError(t, err)
	require.Len(t, byAgent, 1)
	require.Equal(t, child.SpanID, byAgent[0].SpanID, "newest first across both tables")
	sums, err := s.TraceSummaryList(ctx, tenant, nil, [][16]byte{trace})
	require.NoError(t, err)
	require.Equal(t, []store.TraceSummary{{TraceID: trace, Spans: 2, Start: old.Start, End: old.End, Root: "agent.run", Service: "agents"}}, sums)

	n, err := s.SpanExpire(ctx, tenant, store.TraceCutoffs{Spans: base.Add(time.Hour)}, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err = s.SpanList(ctx, tenant, store.SpanFilter{Status: -1})
	require.NoError(t, err)
	require.Empty(t, got, "retention empties both tables")
}
