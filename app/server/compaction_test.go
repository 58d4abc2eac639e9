package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
