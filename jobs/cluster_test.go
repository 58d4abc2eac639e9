package jobs_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/jobs"
)

// clusterRunner counts the runs of each task, by replica.
type clusterRunner struct {
	replica int
	mu      *sync.Mutex
	runs    map[string][]int
}

func (r *clusterRunner) record(task string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[task] = append(r.runs[task], r.replica)
	return nil
}

func (r *clusterRunner) RotateSigningKeys(context.Context) error {
	return r.record(jobs.TaskRotateSigningKeys)
}
func (r *clusterRunner) Retain(context.Context) error { return r.record(jobs.TaskRetain) }
func (r *clusterRunner) SweepApprovals(context.Context) error {
	return r.record(jobs.TaskSweepApprovals)
}
func (r *clusterRunner) DiscoverMCP(context.Context) error { return r.record(jobs.TaskDiscoverMCP) }

// Two replicas on one database run each once-per-cluster task once a
// period between them, not once each: River's leader inserts the periodic
// jobs, and a job runs on one replica.
func TestClusterTasksRunOncePerPeriod(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error){
		"postgres": func(t *testing.T) func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
			db := newPGDatabase(t) // of its own: periodic jobs and leadership are per database
			return func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
				pool, err := pgxpool.New(ctx, db.appURL)
				if err != nil {
					return nil, err
				}
				t.Cleanup(pool.Close)
				return jobs.OpenPostgres(ctx, db.ownerURL, pool, cfg)
			}
		},
		"sqlite": func(t *testing.T) func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
			path := filepath.Join(t.TempDir(), "warden.db")
			return func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
				return jobs.OpenSQLite(ctx, path, cfg)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			newQueue := open(t)
			const period = time.Second
			var mu sync.Mutex
			runs := map[string][]int{}
			started := time.Now()
			for replica := range 2 {
				workers := river.NewWorkers()
				cluster := jobs.NewCluster(workers, jobs.ClusterConfig{RotateEvery: period, RetainEvery: period, SweepApprovalsEvery: period})
				cluster.Bind(&clusterRunner{replica: replica, mu: &mu, runs: runs})
				q, err := newQueue(ctx, jobs.Config{Workers: workers, Logger: testLogger(t), TestOnly: true,
					PeriodicJobs: cluster.PeriodicJobs(), Queues: cluster.Queues(true, true)})
				require.NoError(t, err)
				require.NoError(t, q.Start(ctx))
				t.Cleanup(func() { require.NoError(t, q.Stop(ctx)) })
			}
			tasks := []string{jobs.TaskRotateSigningKeys, jobs.TaskRetain, jobs.TaskSweepApprovals}
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, task := range tasks {
					if len(runs[task]) < 4 {
						return false
					}
				}
				return true
			}, wait, 10*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			periods := int(time.Since(started)/period) + 1
			for _, task := range tasks {
				require.LessOrEqual(t, len(runs[task]), periods, "%s ran more than once a period: %v", task, runs[task])
			}
		})
	}
}

// InsertTx puts the job in the caller's transaction on Postgres: it is
// there when the transaction commits and gone when it rolls back. On
// SQLite, whose store and queue hold two connections, it declines.
func TestInsertTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := newPGDatabase(t)
	e := pg.newEnv(t)
	q := e.open(t, nil, false)
	for _, commit := range []bool{false, true} {
		tx, err := pg.store.Pool().Begin(ctx)
		require.NoError(t, err)
		ok, err := q.InsertTx(ctx, tx, testArgs{N: 1}, &river.InsertOpts{Queue: e.queue})
		require.NoError(t, err)
		require.True(t, ok)
		if commit {
			require.NoError(t, tx.Commit(ctx))
		} else {
			require.NoError(t, tx.Rollback(ctx))
		}
		n, err := e.count(ctx, "available")
		require.NoError(t, err)
		require.Equal(t, map[bool]int{false: 0, true: 1}[commit], n, "committed: %v", commit)
	}

	lite := newSQLiteEnv(t).open(t, nil, false)
	tx, err := pg.store.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	ok, err := lite.InsertTx(ctx, tx, testArgs{N: 1}, nil)
	require.NoError(t, err)
	require.False(t, ok)
}
