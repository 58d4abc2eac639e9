package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// callRecord is a write that claims key for call, charges and creates the
// call's ToolCall record with one event, as the gateway's step 5 does.
func callRecord(call, key string, now time.Time, charges ...store.UsageCharge) *store.CallWrite {
	o := NewObject(resource.KindToolCall, "default", call, map[string]string{"warden.dev/tool": "crm.lookup"},
		map[string]any{"tool": "crm.lookup", "idempotencyKey": key})
	o.Status = map[string]any{"phase": "Running"}
	return &store.CallWrite{
		Claim:   &store.IdempotencyClaim{Namespace: "default", Key: key, Call: call, Now: now, Window: time.Hour},
		Charges: charges,
		Creates: []*resource.Object{o},
		Events: []events.Event{{Type: events.ToolCallRequested, Time: now, Namespace: "default", Subject: "ToolCall/" + call,
			Data: map[string]any{"tool": "crm.lookup"}}},
	}
}

// callFinish is a write that records the result of stored, releasing its
// claim when release is set, as the gateway's result step does.
func callFinish(stored *resource.Object, phase string, release bool) *store.CallWrite {
	w := &store.CallWrite{
		Update: &store.StatusUpdate{Stored: stored, Status: map[string]any{"phase": phase, "output": map[string]any{"ok": true}}},
		Events: []events.Event{{Type: events.ToolCallCompleted, Namespace: "default", Subject: "ToolCall/" + stored.Metadata.Name,
			Data: map[string]any{"phase": phase}}},
	}
	if release {
		key, _ := stored.Spec["idempotencyKey"].(string)
		w.Release = &store.IdempotencyRelease{Namespace: "default", Key: key, Call: stored.Metadata.Name}
	}
	return w
}

func writeCalls(t testing.TB, s store.Store, tenant string, ws ...*store.CallWrite) {
	t.Helper()
	require.NoError(t, s.WriteCalls(context.Background(), tenant, ws, true))
}

func eventsOf(t testing.TB, s store.Store, tenant string) []events.Event {
	t.Helper()
	var out []events.Event
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.EventList(ctx, 0, 1000)
		return err
	}))
	return out
}

// testWriteCalls: a batch of tool-call writes does what the same parts do
// through the Tx methods, in order, in one transaction.
func testWriteCalls(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	now := time.Now().UTC().Truncate(time.Microsecond)
	base := create(t, s, tenant, NewObject(resource.KindTool, "default", "crm.lookup", nil, map[string]any{"type": "rest"}))[0]
	baseRV, _ := store.ParseVersion(base.Metadata.ResourceVersion)

	// Three calls, the third a retry of the first: it finds the first
	// holding the key and writes nothing.
	a, b, retry := callRecord("tc-a", "k1", now), callRecord("tc-b", "k2", now), callRecord("tc-c", "k1", now)
	writeCalls(t, s, tenant, a, b, retry)
	require.NoError(t, a.Err)
	require.Empty(t, a.Holder)
	require.Equal(t, -1, a.Exceeded)
	require.Len(t, a.Created, 1)
	require.Len(t, b.Created, 1)
	require.Equal(t, "tc-a", retry.Holder, "the retry names the call that holds the key")
	require.Empty(t, retry.Created)
	require.Empty(t, retry.Inserted, "a write that found the key held writes no events")

	aRV, _ := store.ParseVersion(a.Created[0].Metadata.ResourceVersion)
	bRV, _ := store.ParseVersion(b.Created[0].Metadata.ResourceVersion)
	require.Greater(t, aRV, baseRV)
	require.Greater(t, bRV, aRV, "versions follow the order of the writes")
	for _, w := range []*store.CallWrite{a, b} {
		c := w.Created[0]
		stored, err := get(t, s, tenant, c.Key())
		require.NoError(t, err)
		require.Equal(t, c, stored, "the returned record is the stored one")
		require.NotEmpty(t, c.Metadata.UID)
		require.Equal(t, int64(1), c.Metadata.Generation)
		require.Equal(t, "Running", c.Status["phase"])
	}
	changes, err := s.ChangesSince(ctx, tenant, baseRV, 100)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	require.Equal(t, store.ChangeAdded, changes[0].Type)
	require.Equal(t, a.Created[0], changes[0].Object)
	require.Equal(t, aRV, changes[0].ResourceVersion)

	evs := eventsOf(t, s, tenant)
	require.Len(t, evs, 2)
	require.Equal(t, a.Inserted, evs[:1], "the returned events are the stored ones")
	require.Equal(t, b.Inserted, evs[1:])
	require.Equal(t, evs[0].Seq+1, evs[1].Seq)
	require.Equal(t, now, evs[0].Time)

	// The result: status replaced with the stored version as
	// precondition, the claim released, the completion event appended.
	fin := callFinish(a.Created[0], "Failed", true)
	writeCalls(t, s, tenant, fin)
	require.NoError(t, fin.Err)
	require.NotNil(t, fin.Updated)
	finRV, _ := store.ParseVersion(fin.Updated.Metadata.ResourceVersion)
	require.Greater(t, finRV, bRV)
	stored, err := get(t, s, tenant, fin.Updated.Key())
	require.NoError(t, err)
	require.Equal(t, fin.Updated, stored)
	require.Equal(t, "Failed", stored.Status["phase"])
	require.Equal(t, a.Created[0].Metadata.UID, stored.Metadata.UID)
	require.Equal(t, finRV, version(t, s, tenant))
	require.Equal(t, "", claim(t, s, tenant, store.IdempotencyClaim{Namespace: "default", Key: "k1", Call: "tc-d", Now: now, Window: time.Hour}),
		"the released key is taken by the next call")
	require.Equal(t, evs[1].Seq+1, fin.Inserted[0].Seq)

	// A stale record: the write reports the conflict and writes nothing
	// of its own; the other writes of the batch still commit.
	stale, other := callFinish(a.Created[0], "Succeeded", false), callFinish(b.Created[0], "Succeeded", true)
	writeCalls(t, s, tenant, stale, other)
	require.ErrorIs(t, stale.Err, store.ErrConflict)
	require.Nil(t, stale.Updated)
	require.Empty(t, stale.Inserted)
	require.NoError(t, other.Err)
	require.Equal(t, "Succeeded", other.Updated.Status["phase"])
	stored, err = get(t, s, tenant, fin.Updated.Key())
	require.NoError(t, err)
	require.Equal(t, "Failed", stored.Status["phase"], "the stale write changed nothing")
	require.Len(t, eventsOf(t, s, tenant), 4)

	// A record missing altogether is a conflict too.
	gone := a.Created[0].DeepCopy()
	gone.Metadata.Name = "tc-gone"
	missing := callFinish(gone, "Succeeded", false)
	writeCalls(t, s, tenant, missing)
	require.ErrorIs(t, missing.Err, store.ErrConflict)
}

// testWriteCallsCharges: charges are all or none; a refused one releases
// the claim the write took and creates nothing.
func testWriteCallsCharges(t *testing.T, s store.Store) {
	tenant := NewTenant()
	now := time.Now()
	ok := callRecord("tc-1", "k1", now, usageCharge("calls", 1, 0.5, 2, 0), usageCharge("cost", 1, 0.5, 0, 10))
	writeCalls(t, s, tenant, ok)
	require.Equal(t, -1, ok.Exceeded)
	require.Equal(t, []store.UsageTotal{{Calls: 1, Cost: 0.5}, {Calls: 1, Cost: 0.5}}, ok.Totals)

	// The second passes; the third would take "calls" to 3 of 2.
	second := callRecord("tc-2", "k2", now, usageCharge("cost", 1, 0.5, 0, 10), usageCharge("calls", 1, 0.5, 2, 0))
	third := callRecord("tc-3", "k3", now, usageCharge("cost", 1, 0.5, 0, 10), usageCharge("calls", 1, 0.5, 2, 0))
	writeCalls(t, s, tenant, second, third)
	require.Equal(t, -1, second.Exceeded)
	require.Equal(t, 1, third.Exceeded, "the refused charge is named")
	require.Empty(t, third.Created)
	require.Empty(t, third.Inserted)
	require.Equal(t, []store.UsageTotal{{Calls: 2, Cost: 1}, {Calls: 2, Cost: 1}}, third.Totals, "the charges before it are taken back")
	require.Equal(t, []store.UsageTotal{{Calls: 2, Cost: 1}, {Calls: 2, Cost: 1}}, usage(t, s, tenant, usageKeys("cost", "calls")...))
	_, err := get(t, s, tenant, resource.Key{Kind: resource.KindToolCall, Namespace: "default", Name: "tc-3"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, "", claim(t, s, tenant, store.IdempotencyClaim{Namespace: "default", Key: "k3", Call: "tc-4", Now: now, Window: time.Hour}),
		"the refused write released its claim")

	// A charge that alone passes its cap is refused without a counter.
	alone := callRecord("tc-5", "k5", now, usageCharge("solo", 3, 0, 2, 0))
	writeCalls(t, s, tenant, alone)
	require.Equal(t, 0, alone.Exceeded)
	require.Equal(t, []store.UsageTotal{{}}, usage(t, s, tenant, usageKeys("solo")...))
}

// testWriteCallsRollback: a write that fails rolls the whole batch back
// and is named by a BatchError.
func testWriteCallsRollback(t *testing.T, s store.Store) {
	tenant := NewTenant()
	now := time.Now()
	writeCalls(t, s, tenant, callRecord("tc-taken", "k0", now))
	before := version(t, s, tenant)
	first, dup := callRecord("tc-new", "k1", now), callRecord("tc-taken", "k2", now)
	err := s.WriteCalls(context.Background(), tenant, []*store.CallWrite{first, dup}, true)
	var be *store.BatchError
	require.True(t, errors.As(err, &be), "got %v", err)
	require.Equal(t, 1, be.Index)
	require.ErrorIs(t, err, store.ErrAlreadyExists)
	_, err = get(t, s, tenant, resource.Key{Kind: resource.KindToolCall, Namespace: "default", Name: "tc-new"})
	require.ErrorIs(t, err, store.ErrNotFound, "the batch was rolled back")
	require.Equal(t, before, version(t, s, tenant))
	require.Len(t, eventsOf(t, s, tenant), 1)
	require.Equal(t, "", claim(t, s, tenant, store.IdempotencyClaim{Namespace: "default", Key: "k1", Call: "tc-x", Now: now, Window: time.Hour}),
		"the rolled-back claim is not held")

	bad := &store.CallWrite{Release: &store.IdempotencyRelease{Namespace: "default"}}
	err = s.WriteCalls(context.Background(), tenant, []*store.CallWrite{callRecord("tc-y", "k9", now), bad}, true)
	require.True(t, errors.As(err, &be), "got %v", err)
	require.Equal(t, 1, be.Index)
	require.ErrorIs(t, s.WriteCalls(context.Background(), "", []*store.CallWrite{bad}, true), store.ErrNoTenant)
}

// testWriteCallsConcurrent: batches racing on one key, and racing with
// claims through the Tx methods, let exactly one call take it.
func testWriteCallsConcurrent(t *testing.T, s store.Store) {
	tenant := NewTenant()
	now := time.Now()
	const n = 40
	ws := make([]*store.CallWrite, n)
	holders := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			call := fmt.Sprint("tc-", i)
			if i%4 == 0 {
				errs[i] = s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
					var err error
					holders[i], err = tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: "once", Call: call, Now: now, Window: time.Hour})
					return err
				})
				return
			}
			ws[i] = callRecord(call, "once", now)
			errs[i] = s.WriteCalls(context.Background(), tenant, []*store.CallWrite{ws[i]}, i%2 == 0)
			holders[i] = ws[i].Holder
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		require.NoError(t, errs[i], "call %d", i)
		if holders[i] == "" {
			require.Equal(t, -1, winner, "calls %d and %d both took the key", winner, i)
			winner = i
		}
	}
	require.NotEqual(t, -1, winner)
	for i := range n {
		if i != winner {
			require.Equal(t, fmt.Sprint("tc-", winner), holders[i])
		}
	}
}

// testWriteCallsIsolation: a tenant's batch neither sees nor touches
// another tenant's claims, counters or records.
func testWriteCallsIsolation(t *testing.T, s store.Store) {
	a, b := NewTenant(), NewTenant()
	now := time.Now()
	wa := callRecord("tc-1", "k", now, usageCharge("rate", 1, 0, 1, 0))
	writeCalls(t, s, a, wa)
	wb := callRecord("tc-1", "k", now, usageCharge("rate", 1, 0, 1, 0))
	writeCalls(t, s, b, wb)
	require.Empty(t, wb.Holder, "B does not see A's claim")
	require.Equal(t, -1, wb.Exceeded, "B's counter is its own")
	require.Len(t, wb.Created, 1, "the same name in another tenant is another record")
	// B cannot update A's record or release A's claim through a batch,
	// even naming A's record exactly.
	only := callRecord("tc-only-a", "k-a", now)
	writeCalls(t, s, a, only)
	up := callFinish(only.Created[0], "Succeeded", false)
	writeCalls(t, s, b, up)
	require.ErrorIs(t, up.Err, store.ErrConflict, "A's record does not exist for B")
	rel := &store.CallWrite{Release: &store.IdempotencyRelease{Namespace: "default", Key: "k", Call: "tc-1"}}
	writeCalls(t, s, b, rel)
	stored, err := get(t, s, a, only.Created[0].Key())
	require.NoError(t, err)
	require.Equal(t, "Running", stored.Status["phase"])
	require.Equal(t, "tc-1", claim(t, s, a, store.IdempotencyClaim{Namespace: "default", Key: "k", Call: "tc-2", Now: now, Window: time.Hour}))
}

// testSync: Sync returns after WriteCalls, concurrently too, and the
// writes are there.
func testSync(t *testing.T, s store.Store) {
	tenant := NewTenant()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			w := callRecord(fmt.Sprint("tc-", i), fmt.Sprint("k", i), now)
			if errs[i] = s.WriteCalls(context.Background(), tenant, []*store.CallWrite{w}, false); errs[i] == nil {
				errs[i] = s.Sync(context.Background())
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "write %d", i)
		_, err := get(t, s, tenant, resource.Key{Kind: resource.KindToolCall, Namespace: "default", Name: fmt.Sprint("tc-", i)})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Sync(ctx)
	if err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
}
