package router

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/storetest"
)

// TestMergeCharges checks that a batch's charges to one counter become one
// charge of their sum, in the order the counters first appear, and that a
// counter's other windows stay apart.
func TestMergeCharges(t *testing.T) {
	hour := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	key := func(k string, at time.Time) store.UsageKey { return store.UsageKey{Key: k, WindowStart: at} }
	got := mergeCharges([]store.UsageCharge{
		{UsageKey: key("agent/a", hour), Calls: 1, Cost: 0.25},
		{UsageKey: key("agent/a:tokens", hour), Calls: 30},
		{UsageKey: key("agent/a", hour.Local()), Calls: 1, Cost: 0.5},
		{UsageKey: key("agent/a", hour.Add(time.Hour)), Calls: 1, Cost: 1},
		{UsageKey: key("agent/a:tokens", hour), Calls: 12},
	})
	require.Equal(t, []store.UsageCharge{
		{UsageKey: key("agent/a", hour), Calls: 2, Cost: 0.75},
		{UsageKey: key("agent/a:tokens", hour), Calls: 42},
		{UsageKey: key("agent/a", hour.Add(time.Hour)), Calls: 1, Cost: 1},
	}, got)
}

// TestRecorderWritesABacklogInParts queues more records of one tenant
// than one transaction holds (a backlog after a burst) and checks that
// every decision, event and charge of them is written, in order.
func TestRecorderWritesABacklogInParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	tenant := storetest.NewTenant()
	bus := events.NewBus()
	var published atomic.Int64
	defer bus.Subscribe(func(events.Event) { published.Add(1) })()
	r := newRecorder(st, bus, slog.New(slog.DiscardHandler))
	defer r.close()
	hour := time.Now().UTC().Truncate(time.Hour)
	const n = 2*txRecords + 17
	// Queued with the writer busy, so that they are taken as one batch.
	r.mu.Lock()
	for i := range n {
		id := fmt.Sprintf("req-%04d", i)
		r.pending = append(r.pending, &record{tenant: tenant,
			decision: store.RouteDecision{ID: id, Namespace: "default", Execution: "ex-1", Route: "bot", Time: time.Now(), Data: json.RawMessage(`{}`)},
			events:   []events.Event{{Type: events.ModelCallCompleted, Namespace: "default", Subject: "ModelCall/" + id}},
			charges:  []store.UsageCharge{{UsageKey: store.UsageKey{Key: "agent/bot", WindowStart: hour}, Calls: 1, Cost: 0.5}},
		})
	}
	r.mu.Unlock()
	require.NoError(t, r.flush(ctx))
	var ds []store.RouteDecision
	var totals []store.UsageTotal
	require.NoError(t, st.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		var err error
		if ds, err = tx.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: "default", Execution: "ex-1", Route: "bot", Limit: 2 * n}); err != nil {
			return err
		}
		totals, err = tx.UsageGet(ctx, []store.UsageKey{{Key: "agent/bot", WindowStart: hour}})
		return err
	}))
	require.Len(t, ds, n)
	for i, d := range ds {
		require.Equal(t, fmt.Sprintf("req-%04d", i), d.ID)
	}
	require.Equal(t, []store.UsageTotal{{Calls: n, Cost: 0.5 * n}}, totals)
	require.EqualValues(t, n, published.Load())
}
