package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
)

// testRouteDecisions checks that routing decisions read back in the order
// they were written, filtered by namespace, execution and route, and stay
// within their tenant.
func testRouteDecisions(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant, other := NewTenant(), NewTenant()
	at := time.Date(2026, 11, 25, 12, 0, 0, 123456000, time.UTC)
	dec := func(id, ns, exec, route string) store.RouteDecision {
		return store.RouteDecision{ID: id, Namespace: ns, Execution: exec, Route: route, Agent: "support", Time: at,
			Data: json.RawMessage(`{"id":"` + id + `","candidates":[{"model":"gpt","outcome":"selected"}]}`)}
	}
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.RouteDecisionInsert(ctx, []store.RouteDecision{
			dec("d1", "default", "e1", "support"), dec("d2", "default", "e2", "support"),
			dec("d3", "default", "e1", "gpt"), dec("d4", "other", "e1", "support"),
		})
	}))
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.RouteDecisionInsert(ctx, []store.RouteDecision{dec("d5", "default", "e1", "support")})
	}))
	require.NoError(t, s.Update(ctx, other, func(ctx context.Context, tx store.Tx) error {
		return tx.RouteDecisionInsert(ctx, []store.RouteDecision{dec("x1", "default", "e1", "support")})
	}))
	list := func(tenant, ns, exec, route string) []string {
		var ids []string
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			ds, err := r.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: ns, Execution: exec, Route: route})
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
			return err
		}))
		return ids
	}
	require.Equal(t, []string{"d1", "d5"}, list(tenant, "default", "e1", "support"))
	require.Equal(t, []string{"d3"}, list(tenant, "default", "e1", "gpt"))
	require.Equal(t, []string{"x1"}, list(other, "default", "e1", "support"), "each tenant sees its own decisions only")
	require.Empty(t, list(tenant, "default", "e9", "support"))

	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		ds, err := r.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: "other", Execution: "e1", Route: "support"})
		require.NoError(t, err)
		require.Len(t, ds, 1)
		d := ds[0]
		require.Equal(t, "d4", d.ID)
		require.Equal(t, "support", d.Agent)
		require.True(t, at.Equal(d.Time), "time %s", d.Time)
		require.JSONEq(t, `{"id":"d4","candidates":[{"model":"gpt","outcome":"selected"}]}`, string(d.Data))
		return nil
	}))

	err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.RouteDecisionInsert(ctx, []store.RouteDecision{{ID: "bad", Namespace: "default", Route: "r", Data: json.RawMessage(`{`)}})
	})
	require.ErrorIs(t, err, store.ErrInvalid)
}

// testRouteDecisionSweep checks that a sweep deletes old decisions oldest
// first, in chunks, and only its tenant's.
func testRouteDecisionSweep(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant, other := NewTenant(), NewTenant()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tn := range []string{tenant, other} {
		require.NoError(t, s.Update(ctx, tn, func(ctx context.Context, tx store.Tx) error {
			var ds []store.RouteDecision
			for i := range 5 {
				ds = append(ds, store.RouteDecision{ID: fmt.Sprint("d", i), Namespace: "default", Execution: "e", Route: "r",
					Time: base.Add(time.Duration(i) * time.Hour), Data: json.RawMessage(`{}`)})
			}
			return tx.RouteDecisionInsert(ctx, ds)
		}))
	}
	sweep := func(before time.Time, limit int) int {
		var n int
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.RouteDecisionSweep(ctx, before, limit)
			return err
		}))
		return n
	}
	require.Equal(t, 2, sweep(base.Add(3*time.Hour), 2), "a chunk of the oldest")
	require.Equal(t, 1, sweep(base.Add(3*time.Hour), 2), "the rest before the cut")
	require.Zero(t, sweep(base.Add(3*time.Hour), 2))
	ids := func(tn string) []string {
		var out []string
		require.NoError(t, s.View(ctx, tn, func(ctx context.Context, r store.Reader) error {
			ds, err := r.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: "default", Execution: "e", Route: "r"})
			for _, d := range ds {
				out = append(out, d.ID)
			}
			return err
		}))
		return out
	}
	require.Equal(t, []string{"d3", "d4"}, ids(tenant))
	require.Len(t, ids(other), 5, "another tenant's decisions stay")
}

// testRouteEventsInsert checks that a batch of events, larger than one
// statement of the SQLite driver holds, reads back in order with
// consecutive sequences after an event inserted alone, and that more than
// a hundred decisions in one call all read back.
func testRouteEventsInsert(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var stored []events.Event
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.EventInsert(ctx, events.Event{Type: events.ModelCallStarted, Namespace: "default", Subject: "first", Time: at}); err != nil {
			return err
		}
		var evs []events.Event
		var ds []store.RouteDecision
		for i := range 150 {
			evs = append(evs, events.Event{Type: events.ModelCallCompleted, Namespace: "default", Subject: fmt.Sprintf("call-%d", i),
				Time: at, Data: map[string]any{"n": i}})
			ds = append(ds, store.RouteDecision{ID: fmt.Sprintf("d%03d", i), Namespace: "default", Execution: "e1", Route: "support",
				Time: at, Data: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`)})
		}
		var err error
		if stored, err = tx.RouteEventsInsert(ctx, evs); err != nil {
			return err
		}
		return tx.RouteDecisionInsert(ctx, ds)
	}))
	require.Len(t, stored, 150)
	require.EqualValues(t, 2, stored[0].Seq, "after the event inserted alone")
	require.EqualValues(t, 151, stored[149].Seq)
	var got []events.Event
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		got, err = r.EventList(ctx, 0, 1000)
		return err
	}))
	require.Len(t, got, 151)
	for i, ev := range got {
		require.EqualValues(t, i+1, ev.Seq)
	}
	require.Equal(t, "call-149", got[150].Subject)
	require.EqualValues(t, 149, got[150].Data["n"])
	require.True(t, at.Equal(got[150].Time))
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		ds, err := r.RouteDecisionList(ctx, store.RouteDecisionListParams{Namespace: "default", Execution: "e1", Route: "support", Limit: 500})
		require.NoError(t, err)
		require.Len(t, ds, 150)
		require.Equal(t, "d149", ds[149].ID)
		require.JSONEq(t, `{"n":149}`, string(ds[149].Data))
		return nil
	}))
}
