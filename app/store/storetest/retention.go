package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

func oldest(t testing.TB, s store.Store, tenant, kind string, after int64, limit int) []*resource.Object {
	t.Helper()
	var out []*resource.Object
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.RecordsOldest(ctx, kind, after, limit)
		return err
	}))
	return out
}

func testRecordsPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	calls := create(t, s, a,
		NewObject(resource.KindToolCall, "default", "call-1", nil, map[string]any{"n": 1}),
		NewObject(resource.KindToolCall, "default", "call-2", nil, map[string]any{"n": 2}),
		NewObject(resource.KindToolCall, "other", "call-3", nil, map[string]any{"n": 3}),
		NewObject(resource.KindApproval, "default", "ap-1", nil, nil),
	)
	create(t, s, b, NewObject(resource.KindToolCall, "default", "call-1", nil, nil))
	// call-1 is written again: it becomes the least recently written last.
	again, err := update(t, s, a, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, calls[0].Key(), map[string]any{"phase": "Succeeded"}, "")
	})
	require.NoError(t, err)

	got := oldest(t, s, a, resource.KindToolCall, 0, 10)
	require.Equal(t, []string{"default/call-2", "other/call-3", "default/call-1"}, names(got))
	require.Equal(t, "Succeeded", got[2].Status["phase"])
	v2, err := store.ParseVersion(got[0].Metadata.ResourceVersion)
	require.NoError(t, err)
	require.Equal(t, []string{"other/call-3"}, names(oldest(t, s, a, resource.KindToolCall, v2, 1)), "after and limit")
	require.Equal(t, []string{"default/ap-1"}, names(oldest(t, s, a, resource.KindApproval, 0, 10)))

	// Only runtime records are purged.
	agent := create(t, s, a, NewObject(resource.KindAgent, "default", "bot", nil, nil))[0]
	require.Error(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.RecordsPurge(ctx, []*resource.Object{agent})
		return err
	}))

	// call-1 as first read is stale: it was written since, and is kept.
	before := version(t, s, a)
	var n int
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		var err error
		n, err = tx.RecordsPurge(ctx, []*resource.Object{got[0], calls[0], got[1]})
		return err
	}))
	require.Equal(t, 2, n)
	for _, k := range []resource.Key{got[0].Key(), got[1].Key()} {
		_, err := get(t, s, a, k)
		require.ErrorIs(t, err, store.ErrNotFound, "%s purged", k)
	}
	kept, err := get(t, s, a, calls[0].Key())
	require.NoError(t, err)
	require.Equal(t, again.Metadata.ResourceVersion, kept.Metadata.ResourceVersion)
	_, err = get(t, s, b, calls[0].Key())
	require.NoError(t, err, "the other tenant's record of the same name is untouched")

	// Each purge is a DELETED change carrying the record's identity only.
	require.Equal(t, before+2, version(t, s, a))
	changes, err := s.ChangesSince(ctx, a, before, 10)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	for i, c := range changes {
		require.Equal(t, store.ChangeDeleted, c.Type)
		require.Equal(t, before+int64(i)+1, c.ResourceVersion)
		require.Equal(t, store.FormatVersion(c.ResourceVersion), c.Object.Metadata.ResourceVersion)
		require.Equal(t, got[i].Key(), c.Object.Key())
		require.Equal(t, got[i].Metadata.UID, c.Object.Metadata.UID)
		require.Nil(t, c.Object.Spec)
		require.Nil(t, c.Object.Status)
	}

	// Nothing left to purge: no version, no change.
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		var err error
		n, err = tx.RecordsPurge(ctx, []*resource.Object{got[0]})
		return err
	}))
	require.Zero(t, n)
	require.Equal(t, before+2, version(t, s, a))
}

func testEventSweep(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	for _, tenant := range []string{a, b} {
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			for i := range 5 {
				if _, err := tx.EventInsert(ctx, events.Event{Type: events.ToolCallRequested, Time: base.Add(time.Duration(i) * time.Minute)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	sweep := func(before time.Time, limit int) int {
		t.Helper()
		var n int
		require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.EventSweep(ctx, before, limit)
			return err
		}))
		return n
	}
	seqs := func(tenant string) []int64 {
		t.Helper()
		var out []int64
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			evs, err := r.EventList(ctx, 0, 100)
			for _, ev := range evs {
				out = append(out, ev.Seq)
			}
			return err
		}))
		return out
	}
	// Events 1 to 3 are older than base+2m30s; a limit of 2 takes two.
	require.Equal(t, 2, sweep(base.Add(150*time.Second), 2))
	require.Equal(t, []int64{3, 4, 5}, seqs(a))
	require.Equal(t, 1, sweep(base.Add(150*time.Second), 2))
	require.Equal(t, 0, sweep(base.Add(150*time.Second), 2))
	require.Equal(t, []int64{4, 5}, seqs(a))
	require.Equal(t, []int64{1, 2, 3, 4, 5}, seqs(b), "the other tenant keeps its events")
	// New events go on from the tenant's sequence.
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		ev, err := tx.EventInsert(ctx, events.Event{Type: events.ToolCallRequested, Time: base})
		require.Equal(t, int64(6), ev.Seq)
		return err
	}))
	require.Error(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.EventSweep(ctx, base, 0)
		return err
	}))
}

func testSessionSweep(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	insert := func(tenant, id string, expires time.Time) store.Session {
		t.Helper()
		sess := store.Session{IDHash: hashSecret(id + tenant), Tenant: tenant, Email: "eve@example.com", CSRFToken: "csrf",
			CreatedAt: base.Add(-time.Hour), ExpiresAt: expires}
		require.NoError(t, s.SessionInsert(ctx, sess))
		return sess
	}
	var expired []store.Session
	for i := range 3 {
		expired = append(expired, insert(a, "old"+string(rune('a'+i)), base.Add(time.Duration(i)*time.Minute)))
	}
	live := insert(a, "live", base.Add(time.Hour))
	other := insert(b, "old", base)
	sweep := func(limit int) int {
		t.Helper()
		var n int
		require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.SessionSweep(ctx, base.Add(30*time.Minute), limit)
			return err
		}))
		return n
	}
	require.Equal(t, 2, sweep(2))
	require.Equal(t, 1, sweep(2))
	require.Equal(t, 0, sweep(2))
	// The swept sessions are gone even for a caller whose clock is early.
	for _, e := range expired {
		_, err := s.SessionGet(ctx, e.IDHash, base.Add(-2*time.Hour))
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	_, err := s.SessionGet(ctx, live.IDHash, base)
	require.NoError(t, err, "a live session stays")
	_, err = s.SessionGet(ctx, other.IDHash, base.Add(-2*time.Hour))
	require.NoError(t, err, "the other tenant's expired session is its own sweep's")
}

func testAuditCut(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	var recs []audit.Record
	for _, tenant := range []string{a, b} {
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			for i := range 6 {
				r, err := tx.AuditInsert(ctx, audit.Record{Time: base.Add(time.Duration(i) * time.Minute), Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
				if err != nil {
					return err
				}
				if tenant == a {
					recs = append(recs, r)
				}
			}
			return nil
		}))
	}
	read := func(tenant string) (cp *audit.Checkpoint, seqs []int64, head int64) {
		t.Helper()
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			if cp, err = r.AuditCheckpoint(ctx); err != nil {
				return err
			}
			list, err := r.AuditList(ctx, store.AuditListParams{Limit: 100})
			for _, rec := range list {
				seqs = append(seqs, rec.Seq)
			}
			if err != nil {
				return err
			}
			head, err = r.AuditHead(ctx)
			return err
		}))
		return cp, seqs, head
	}
	cut := func(cp audit.Checkpoint) (int, error) {
		var n int
		err := s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.AuditCut(ctx, cp)
			return err
		})
		return n, err
	}
	cpAt := func(i int) audit.Checkpoint {
		return audit.Checkpoint{Tenant: a, Seq: recs[i].Seq, Hash: recs[i].Hash, Time: recs[i].Time, CutAt: base.Add(time.Hour), Seal: []byte("seal-" + recs[i].Hash)}
	}
	cp, _, _ := read(a)
	require.Nil(t, cp)

	n, err := cut(cpAt(2))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	cp, seqs, head := read(a)
	require.Equal(t, cpAt(2), *cp)
	require.Equal(t, []int64{4, 5, 6}, seqs)
	require.Equal(t, int64(6), head, "the head stays")

	for name, bad := range map[string]audit.Checkpoint{
		"behind":        cpAt(1),
		"same":          cpAt(2),
		"wrong hash":    func() audit.Checkpoint { c := cpAt(4); c.Hash = recs[3].Hash; return c }(),
		"wrong time":    func() audit.Checkpoint { c := cpAt(4); c.Time = c.Time.Add(time.Second); return c }(),
		"beyond head":   func() audit.Checkpoint { c := cpAt(4); c.Seq = 7; return c }(),
		"other tenant":  func() audit.Checkpoint { c := cpAt(4); c.Tenant = b; return c }(),
		"without seal":  func() audit.Checkpoint { c := cpAt(4); c.Seal = nil; return c }(),
		"without a seq": func() audit.Checkpoint { c := cpAt(4); c.Seq = 0; return c }(),
	} {
		_, err := cut(bad)
		require.Error(t, err, name)
	}
	_, err = cut(cpAt(1))
	require.ErrorIs(t, err, store.ErrConflict)
	cp, seqs, _ = read(a)
	require.Equal(t, cpAt(2), *cp, "a refused cut changes nothing")
	require.Equal(t, []int64{4, 5, 6}, seqs)

	// The cut moves on; the chain's newest record may go too.
	n, err = cut(cpAt(5))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	cp, seqs, head = read(a)
	require.Equal(t, int64(6), cp.Seq)
	require.Empty(t, seqs)
	require.Equal(t, int64(6), head)
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		r, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
		require.Equal(t, int64(7), r.Seq)
		require.Equal(t, recs[5].Hash, r.PrevHash, "the chain goes on from the cut")
		return err
	}))

	cp, seqs, _ = read(b)
	require.Nil(t, cp, "the other tenant has no checkpoint")
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, seqs)
}
