package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
