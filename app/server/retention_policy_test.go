package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/storetest"
)

// openAt opens a store of backend name ("sqlite" or "postgres") whose
// timestamps come from clock.
func openAt(t *testing.T, name string, clock *fakeClock) store.Store {
	t.Helper()
	url := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	if name == "postgres" {
		url = pgtest.NewDatabase(t)
	}
	st, err := backend.Open(context.Background(), url, backend.Options{Now: clock.now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func toolCall(name, phase string, completed time.Time) *resource.Object {
	o := storetest.NewObject(resource.KindToolCall, "default", name, nil, map[string]any{"toolRef": map[string]any{"name": "crm.refund"}})
	o.Status = map[string]any{"phase": phase}
	if !completed.IsZero() {
		o.Status["completedAt"] = completed.UTC().Format(time.RFC3339Nano)
	}
	return o
}

func approvalRecord(name, status string, decided time.Time) *resource.Object {
	o := storetest.NewObject(resource.KindApproval, "default", name, nil, map[string]any{"toolCallRef": map[string]any{"name": name}})
	o.Status = map[string]any{"status": status}
	if !decided.IsZero() {
		o.Status["decidedAt"] = decided.UTC().Format(time.RFC3339Nano)
	}
	return o
}

func names(t testing.TB, st store.Store, tenant, kind string) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		objs, err := store.ListAll(ctx, r, kind, nil)
		for _, o := range objs {
			out = append(out, o.Metadata.Name)
		}
		return err
	}))
	return out
}

// Each kind of record goes after its age and not before; an unfinished
// call, a pending approval and a call whose idempotency window is open
// never go; the audit chain still verifies from the sealed checkpoint.
func TestRetainTenant(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := &fakeClock{t: t0}
			st := openAt(t, name, clock)
			sealer := newKeyring(t)
			const tenant = "acme"
			require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
			update := func(fn func(ctx context.Context, tx store.Tx) error) {
				t.Helper()
				require.NoError(t, st.Update(ctx, tenant, fn))
			}
			create := func(objs ...*resource.Object) {
				t.Helper()
				update(func(ctx context.Context, tx store.Tx) error {
					for _, o := range objs {
						if _, err := tx.ResourceCreate(ctx, o); err != nil {
							return err
						}
					}
					return nil
				})
			}
			// Tool calls and approvals keep 1h after they finish; the
			// idempotency window is 3h.
			tenantObj := storetest.NewObject(resource.KindTenant, "", tenant, nil, map[string]any{
				"retention": map[string]any{"toolCalls": "1h", "events": "2h", "audit": "24h"}})
			create(tenantObj, storetest.NewObject(resource.KindPolicy, "default", "dedupe", nil, map[string]any{
				"rules": []any{}, "idempotency": map[string]any{"window": "3h"}}))
			create(
				toolCall("done", resource.ToolCallSucceeded, t0),
				toolCall("failed", resource.ToolCallFailed, t0.Add(time.Minute)),
				toolCall("running", resource.ToolCallRunning, time.Time{}),
				toolCall("awaiting", resource.ToolCallAwaitingApproval, time.Time{}),
				approvalRecord("approved", resource.ApprovalApproved, t0),
				approvalRecord("pending", resource.ApprovalPending, time.Time{}),
			)
			for i := range 3 {
				update(func(ctx context.Context, tx store.Tx) error {
					_, err := tx.EventInsert(ctx, events.Event{Type: events.ToolCallRequested, Time: t0.Add(time.Duration(i) * 2 * time.Hour)})
					if err != nil {
						return err
					}
					_, err = tx.AuditInsert(ctx, audit.Record{Time: t0.Add(time.Duration(i) * 12 * time.Hour), Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
					return err
				})
			}
			require.NoError(t, st.SessionInsert(ctx, store.Session{IDHash: "expired", Tenant: tenant, Email: "a@example.com", CSRFToken: "c", CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)}))
			require.NoError(t, st.SessionInsert(ctx, store.Session{IDHash: "live", Tenant: tenant, Email: "a@example.com", CSRFToken: "c", CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}))
			clock.add(4 * time.Hour)
			// Written later: a call finished 30 minutes before the round.
			create(toolCall("recent", resource.ToolCallSucceeded, clock.now().Add(90*time.Minute)))

			retain := func(at time.Time) {
				t.Helper()
				require.NoError(t, server.RetainTenant(ctx, st, sealer, tenant, at))
			}
			// At t0+2h30m the finished calls are old enough but their
			// idempotency window (3h + a minute) is still open.
			retain(t0.Add(150 * time.Minute))
			require.ElementsMatch(t, []string{"done", "failed", "running", "awaiting", "recent"}, names(t, st, tenant, resource.KindToolCall))
			require.ElementsMatch(t, []string{"pending"}, names(t, st, tenant, resource.KindApproval), "decided two and a half hours ago")

			// At t0+5h the two finished calls go; the unfinished ones and
			// the one finished 30 minutes ago stay.
			retain(t0.Add(5 * time.Hour))
			require.ElementsMatch(t, []string{"running", "awaiting", "recent"}, names(t, st, tenant, resource.KindToolCall))
			require.ElementsMatch(t, []string{"pending"}, names(t, st, tenant, resource.KindApproval))
			// Events older than 2h (those of t0 and t0+2h, at t0+5h) go.
			var evs []events.Event
			require.NoError(t, st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
				var err error
				evs, err = r.EventList(ctx, 0, 100)
				return err
			}))
			var kept []int64
			for _, ev := range evs {
				kept = append(kept, ev.Seq)
			}
			require.Equal(t, []int64{3}, kept)
			_, err := st.SessionGet(ctx, "expired", t0)
			require.ErrorIs(t, err, store.ErrNotFound, "the expired session is gone")
			_, err = st.SessionGet(ctx, "live", t0)
			require.NoError(t, err)

			// Much later everything finished goes, nothing unfinished.
			retain(t0.Add(100 * 24 * time.Hour))
			require.ElementsMatch(t, []string{"running", "awaiting"}, names(t, st, tenant, resource.KindToolCall))
			require.ElementsMatch(t, []string{"pending"}, names(t, st, tenant, resource.KindApproval))

			// The audit log: the records older than 24h went behind a
			// checkpoint; the chain verifies from it and not without it.
			verify := func() audit.Report {
				t.Helper()
				var cp *audit.Checkpoint
				var recs []audit.Record
				var head int64
				require.NoError(t, st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
					var err error
					if cp, err = r.AuditCheckpoint(ctx); err != nil {
						return err
					}
					if recs, err = r.AuditList(ctx, store.AuditListParams{Limit: 100}); err != nil {
						return err
					}
					head, err = r.AuditHead(ctx)
					return err
				}))
				return audit.VerifyChainFrom(sealer, cp, recs, head)
			}
			rep := verify()
			require.True(t, rep.OK, "%+v", rep.Problems)
			require.Equal(t, int64(3), rep.Head)
			require.NotNil(t, rep.Checkpoint)
			require.Equal(t, int64(3), rep.Checkpoint.Seq, "all three records are older than 24h at t0+100d")
			require.Zero(t, rep.Records)
			// New records chain on from the cut.
			update(func(ctx context.Context, tx store.Tx) error {
				_, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
				return err
			})
			rep = verify()
			require.True(t, rep.OK, "%+v", rep.Problems)
			require.Equal(t, 1, rep.Records)
			require.False(t, audit.VerifyChainFrom(sealer, nil, nil, 4).OK, "without the checkpoint the start is missing")
		})
	}
}

// The audit cut is made once even when the job runs on two replicas at
// once (as when leadership moves mid-round): every record goes once, the
// checkpoint only moves forward, and the chain verifies.
func TestRetainTenantConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	st := openAt(t, "postgres", clock)
	sealer := newKeyring(t)
	const tenant = "acme"
	require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
	const n = 2*store.RetentionChunk + 17
	for i := range n {
		if i%100 == 0 {
			clock.add(time.Minute)
		}
		require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.ResourceCreate(ctx, toolCall(fmt.Sprint("call-", i), resource.ToolCallSucceeded, clock.now())); err != nil {
				return err
			}
			_, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
			return err
		}))
	}
	at := t0.Add(400 * 24 * time.Hour)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { assert.NoError(t, server.RetainTenant(ctx, st, sealer, tenant, at)) })
	}
	wg.Wait()
	require.Empty(t, names(t, st, tenant, resource.KindToolCall))
	var cp *audit.Checkpoint
	var recs []audit.Record
	require.NoError(t, st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if cp, err = r.AuditCheckpoint(ctx); err != nil {
			return err
		}
		recs, err = r.AuditList(ctx, store.AuditListParams{Limit: 10})
		return err
	}))
	require.Empty(t, recs)
	rep := audit.VerifyChainFrom(sealer, cp, nil, n)
	require.True(t, rep.OK, "%+v", rep.Problems)
	require.Equal(t, int64(n), cp.Seq)
}

// BenchmarkRetainToolCalls measures the retention of finished tool calls
// on each store: one op is one call deleted (read outside the writer,
// deleted with its DELETED change in chunks of store.RetentionChunk).
// ms/chunk is the time of one chunk, its read and its delete; only the
// delete holds the tenant's writer.
func BenchmarkRetainToolCalls(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := &fakeClock{t: t0}
			url := "sqlite://" + filepath.Join(b.TempDir(), "w.db")
			if name == "postgres" {
				url = pgtest.NewDatabase(b)
			}
			st, err := backend.Open(ctx, url, backend.Options{Now: clock.now})
			require.NoError(b, err)
			b.Cleanup(func() { _ = st.Close() })
			const tenant = "acme"
			require.NoError(b, st.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
			for i := 0; i < b.N; i += 100 {
				require.NoError(b, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
					for j := i; j < min(i+100, b.N); j++ {
						o := toolCall(fmt.Sprint("call-", j), resource.ToolCallSucceeded, t0)
						o.Spec["input"] = map[string]any{"q": j, "note": "a governed call of about a kilobyte once encoded, with its input and output"}
						o.Status["output"] = map[string]any{"ok": true, "items": []any{"alpha", "beta"}}
						if _, err := tx.ResourceCreate(ctx, o); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			b.ResetTimer()
			start := time.Now()
			require.NoError(b, server.RetainTenant(ctx, st, nil, tenant, t0.Add(400*24*time.Hour)))
			elapsed := time.Since(start)
			b.StopTimer()
			chunks := (b.N + store.RetentionChunk - 1) / store.RetentionChunk
			b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(chunks), "ms/chunk")
			require.Empty(b, names(b, st, tenant, resource.KindToolCall))
		})
	}
}

// The trace service's data goes by the tenant's spec.retention.spans,
// .metrics and .ocsfEvents; another tenant keeps the defaults.
func TestRetainTenantTraces(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			st := openAt(t, name, &fakeClock{t: t0})
			const short, long = "acme", "globex"
			for _, tenant := range []string{short, long} {
				require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
				// Spans, rollups and events of t0 and of t0+10h.
				for _, at := range []time.Time{t0, t0.Add(10 * time.Hour)} {
					sp := storetest.NewSpan(storetest.NewTraceID(), [8]byte{}, "call", at, time.Millisecond)
					sp.Tool = "crm.get"
					require.NoError(t, st.SpanWrite(ctx, tenant, &store.SpanBatch{Spans: []store.Span{sp},
						Rollups: []store.SpanRollup{{Namespace: "default", Tool: "crm.get", Minute: at.Unix() / 60 * 60, Calls: 1},
							{Namespace: "default", Tool: "crm.get", Width: store.RollupHour, Minute: at.Unix() / 3600 * 3600, Calls: 1}},
						Events: []store.OCSFEvent{{Namespace: "default", Time: at.UnixMilli(), ClassUID: 6003, Data: []byte("{}")}}}))
				}
			}
			require.NoError(t, st.Update(ctx, short, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindTenant, "", short, nil, map[string]any{
					"retention": map[string]any{"spans": "1h", "metrics": "5h", "ocsfEvents": "2h"}}))
				return err
			}))
			// counts returns the tenant's spans, rollup calls and events.
			counts := func(tenant string) []int {
				t.Helper()
				spans, err := st.SpanList(ctx, tenant, store.SpanFilter{Status: -1})
				require.NoError(t, err)
				rs, err := st.SpanRollupList(ctx, tenant, store.RollupFilter{Since: 0, Until: t0.Add(100 * 24 * time.Hour).Unix()})
				require.NoError(t, err)
				calls := 0
				for _, r := range rs {
					calls += int(r.Calls)
				}
				evs, err := st.OCSFEventList(ctx, tenant, store.OCSFFilter{})
				require.NoError(t, err)
				return []int{len(spans), calls, len(evs)}
			}
			// At t0+10h30m: acme's spans and events of t0 are past 1h and
			// 2h, its metrics of t0 past 5h; the newer ones stay.
			require.NoError(t, server.RetainTenant(ctx, st, nil, short, t0.Add(10*time.Hour+30*time.Minute)))
			require.NoError(t, server.RetainTenant(ctx, st, nil, long, t0.Add(10*time.Hour+30*time.Minute)))
			require.Equal(t, []int{1, 1, 1}, counts(short))
			require.Equal(t, []int{2, 2, 2}, counts(long), "the defaults keep a week of spans and events")
			// Eight days on: globex's spans and events go, its metrics stay.
			require.NoError(t, server.RetainTenant(ctx, st, nil, long, t0.Add(8*24*time.Hour)))
			require.Equal(t, []int{0, 2, 0}, counts(long))
			require.NoError(t, server.RetainTenant(ctx, st, nil, long, t0.Add(91*24*time.Hour)))
			require.Equal(t, []int{0, 0, 0}, counts(long), "metrics are kept 90 days")
		})
	}
}
