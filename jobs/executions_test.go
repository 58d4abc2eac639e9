package jobs_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/jobs"
)

// TestExecutionJobCommitsWithItsRecord checks, on both stores, that an
// execution's job is inserted in the store transaction that records the
// execution: rolled back with it, committed with it. A job queued after the
// commit could be lost by a crash in between, leaving a Scheduled execution
// that nothing runs.
func TestExecutionJobCommitsWithItsRecord(t *testing.T) {
	t.Parallel()
	type bundle struct {
		st    store.Store
		queue *jobs.Queue
		// jobs counts the execution jobs of the execution name.
		jobs func(ctx context.Context, name string) (int, error)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, workers *river.Workers) bundle
	}{
		{"sqlite", func(t *testing.T, workers *river.Workers) bundle {
			path := filepath.Join(t.TempDir(), "warden.db")
			s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			q, err := jobs.OpenSQLite(t.Context(), path, jobs.Config{Workers: workers})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })
			return bundle{st: s, queue: q, jobs: func(ctx context.Context, name string) (int, error) {
				db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_query_only=1")
				if err != nil {
					return 0, err
				}
				defer func() { _ = db.Close() }()
				var n int
				err = db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE kind = ? AND json_extract(args, '$.name') = ?`,
					jobs.ExecutionArgs{}.Kind(), name).Scan(&n)
				return n, err
			}}
		}},
		{"postgres", func(t *testing.T, workers *river.Workers) bundle {
			db := newPGDatabase(t)
			pool, err := pgxpool.New(t.Context(), db.appURL)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			q, err := jobs.OpenPostgres(t.Context(), db.ownerURL, pool, jobs.Config{Workers: workers})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })
			return bundle{st: db.store, queue: q, jobs: func(ctx context.Context, name string) (int, error) {
				var n int
				err := db.store.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND args->>'name' = $2`,
					jobs.ExecutionArgs{}.Kind(), name).Scan(&n)
				return n, err
			}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers := river.NewWorkers()
			ex := jobs.NewExecutions(workers)
			b := tc.setup(t, workers)
			ex.SetQueue(b.queue)
			tenant := storetest.NewTenant()
			rollback := errors.New("the record's write failed")
			enqueue := func(name string, fail bool) error {
				return b.st.Update(t.Context(), tenant, func(ctx context.Context, tx store.Tx) error {
					scheduled, err := ex.EnqueueExecutionTx(ctx, tx, tenant, "default", name)
					if err != nil {
						return err
					}
					require.True(t, scheduled, "the job is inserted in the store's transaction")
					if fail {
						return rollback
					}
					return nil
				})
			}
			require.ErrorIs(t, enqueue("rolled-back", true), rollback)
			n, err := b.jobs(t.Context(), "rolled-back")
			require.NoError(t, err)
			require.Zero(t, n, "a rolled-back execution leaves no job")

			require.NoError(t, enqueue("committed", false))
			n, err = b.jobs(t.Context(), "committed")
			require.NoError(t, err)
			require.Equal(t, 1, n, "a committed execution has its job")
		})
	}
}
