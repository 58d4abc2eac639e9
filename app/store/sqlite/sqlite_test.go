package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
)

func openTB(tb testing.TB) store.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "sub", "warden.db"), sqlite.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return openTB(t) })
}

func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	obj := storetest.NewObject("Agent", "default", "a", nil, map[string]any{"v": "1"})
	require.NoError(t, s.Update(ctx, "t1", func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, obj)
		return err
	}))
	res := listOnce(t, s, "t1", 1)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the database file is private")
	require.NoError(t, s.Close())

	// Migrations are idempotent and the continue-token key survives.
	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.View(ctx, "t1", func(ctx context.Context, r store.Reader) error {
		got, err := r.ResourceGet(ctx, obj.Key())
		require.NoError(t, err)
		require.Equal(t, "1", got.Metadata.ResourceVersion)
		_, err = r.ResourceList(ctx, store.ListParams{Kind: "Agent", Continue: res.Continue})
		return err
	}))
}

func listOnce(t *testing.T, s store.Store, tenant string, limit int) *store.ListResult {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "b", nil, nil))
		return err
	}))
	var res *store.ListResult
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		res, err = r.ResourceList(ctx, store.ListParams{Kind: "Agent", Limit: limit})
		return err
	}))
	require.NotEmpty(t, res.Continue)
	return res
}

func BenchmarkList10k(b *testing.B) {
	storetest.BenchmarkList(b, func(b *testing.B) store.Store { return openTB(b) })
}

func BenchmarkCreate1k(b *testing.B) {
	storetest.BenchmarkCreate(b, func(b *testing.B) store.Store { return openTB(b) })
}

func BenchmarkIdempotencyClaim(b *testing.B) {
	storetest.BenchmarkIdempotencyClaim(b, func(b *testing.B) store.Store { return openTB(b) })
}

func BenchmarkUsageCharge(b *testing.B) {
	storetest.BenchmarkUsageCharge(b, func(b *testing.B) store.Store { return openTB(b) })
}

func BenchmarkWriteCalls16(b *testing.B) {
	storetest.BenchmarkWriteCalls(b, func(b *testing.B) store.Store { return openTB(b) })
}
