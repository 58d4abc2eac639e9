package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/migrations"
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

func BenchmarkWriteCall(b *testing.B) {
	storetest.BenchmarkWriteCall(b, func(b *testing.B) store.Store { return openTB(b) })
}

// An installation from before migration 0004 keeps its resources and its
// change log when 0004 turns their tables into rowid tables; its down file
// turns them back.
func TestMigrationRowidObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	big := strings.Repeat("x", 6000) // longer than a page: overflows either way
	var keys []resource.Key
	for i, v := range []string{"short", big} {
		obj := storetest.NewObject("Agent", "default", fmt.Sprint("a", i), nil, map[string]any{"v": v})
		keys = append(keys, obj.Key())
		require.NoError(t, s.Update(ctx, "t1", func(ctx context.Context, tx store.Tx) error {
			_, err := tx.ResourceCreate(ctx, obj)
			return err
		}))
	}
	require.NoError(t, s.Close())

	// Back to the schema before 0004, as an older installation has it.
	down, err := migrations.FS.ReadFile("sqlite/0004_rowid_objects.down.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, string(down))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 4`)
	require.NoError(t, err)
	schema := func() string {
		var ddl string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT group_concat(sql, ';') FROM sqlite_schema WHERE name IN ('resources', 'changes')`).Scan(&ddl))
		return ddl
	}
	require.Equal(t, 2, strings.Count(schema(), "WITHOUT ROWID"))
	require.NoError(t, db.Close())

	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	db, err = sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	require.NotContains(t, schema(), "WITHOUT ROWID")
	require.NoError(t, db.Close())
	require.NoError(t, s.View(ctx, "t1", func(ctx context.Context, r store.Reader) error {
		for i, key := range keys {
			got, err := r.ResourceGet(ctx, key)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(i+1), got.Metadata.ResourceVersion)
		}
		return nil
	}))
	changes, err := s.ChangesSince(ctx, "t1", 0, 10)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	// The key is still unique.
	err = s.Update(ctx, "t1", func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", "a0", nil, nil))
		return err
	})
	require.ErrorIs(t, err, store.ErrAlreadyExists)
}

// TestLegacySpans reads spans that earlier versions stored a row each.
func TestLegacySpans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	storetest.LegacySpans(t, s, func(tenant string, sp store.Span) {
		_, err := db.ExecContext(ctx, `INSERT INTO spans (tenant_id, `+store.SpanColumns+`) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, ?)`,
			tenant, sp.Namespace, sp.TraceID[:], sp.SpanID[:], sp.Name, sp.Kind, sp.Start, sp.End, sp.Status, sp.Service, sp.Agent, sp.Resource, sp.Data)
		require.NoError(t, err)
	})
}
