package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
)

// Every tenant's change log is cut to its newest entries; a watcher
// resuming from before them is told so (ErrGone, 410 Gone over HTTP), and
// one resuming within them misses nothing.
func TestCompactChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warden.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	writes := map[string]int{"acme": 5, "globex": 3}
	for tenant, n := range writes {
		require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: tenant}))
		for i := range n {
			require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", fmt.Sprint("a", i), nil, nil))
				return err
			}))
		}
	}

	require.NoError(t, server.CompactChanges(ctx, st, 2))
	for tenant, n := range writes {
		_, err := st.ChangesSince(ctx, tenant, 0, 100)
		require.ErrorIs(t, err, store.ErrGone, tenant)
		kept, err := st.ChangesSince(ctx, tenant, int64(n-2), 100)
		require.NoError(t, err, tenant)
		require.Len(t, kept, 2, tenant)
		require.Equal(t, int64(n), kept[1].ResourceVersion, tenant)
	}
	// Compacting again changes nothing.
	require.NoError(t, server.CompactChanges(ctx, st, 2))
	kept, err := st.ChangesSince(ctx, "acme", 3, 100)
	require.NoError(t, err)
	require.Len(t, kept, 2)
}

// The sweep follows each tenant's own policies: a claim or counter goes once
// the longest window of the tenant's policies (and a minute) has passed,
// and not before.
func TestSweepGateway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warden.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
	claimAt := func(tenant, key string, at time.Time) {
		t.Helper()
		require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			holder, err := tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: key, Call: "tc-" + key, Now: at, Window: time.Minute})
			require.Empty(t, holder)
			return err
		}))
	}
	// held reports whether key's claim is still there: a claim with a
	// window longer than any age here is refused by an existing one.
	held := func(tenant, key string) bool {
		t.Helper()
		var holder string
		require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			var err error
			holder, err = tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: key, Call: "tc-probe", Now: now, Window: 1000 * time.Hour})
			return err
		}))
		return holder != ""
	}
	counter := func(at time.Time) store.UsageKey {
		return store.UsageKey{Key: "tool:default/crm.refund", WindowStart: at}
	}

	require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: "acme"}))
	require.NoError(t, st.TenantCreate(ctx, store.TenantRecord{ID: "globex"}))
	require.NoError(t, st.Update(ctx, "acme", func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindPolicy, "default", "dedupe", nil, map[string]any{
			"idempotency": map[string]any{"window": "2h"},
			"limits":      []any{map[string]any{"scope": "tool", "match": "*", "window": "1h", "maxCalls": 100}},
		}))
		return err
	}))
	claimAt("acme", "old", now.Add(-2*time.Hour-2*time.Minute)) // past 2h + 1m
	claimAt("acme", "kept", now.Add(-2*time.Hour-30*time.Second))
	claimAt("globex", "old", now.Add(-12*time.Minute)) // past 10m + 1m
	claimAt("globex", "kept", now.Add(-10*time.Minute-30*time.Second))
	require.NoError(t, st.Update(ctx, "acme", func(ctx context.Context, tx store.Tx) error {
		_, _, err := tx.UsageCharge(ctx, []store.UsageCharge{
			{UsageKey: counter(now.Add(-time.Hour - 2*time.Minute)), Calls: 1}, // past 1h + 1m
			{UsageKey: counter(now.Add(-time.Hour)), Calls: 2},
		})
		return err
	}))

	require.NoError(t, server.SweepGateway(ctx, st, now))
	for _, tc := range []struct {
		tenant, key string
		held        bool
	}{{"acme", "old", false}, {"acme", "kept", true}, {"globex", "old", false}, {"globex", "kept", true}} {
		require.Equal(t, tc.held, held(tc.tenant, tc.key), "%s/%s", tc.tenant, tc.key)
	}
	require.NoError(t, st.View(ctx, "acme", func(ctx context.Context, r store.Reader) error {
		got, err := r.UsageGet(ctx, []store.UsageKey{counter(now.Add(-time.Hour - 2*time.Minute)), counter(now.Add(-time.Hour))})
		require.Equal(t, []store.UsageTotal{{}, {Calls: 2}}, got)
		return err
	}))
}
