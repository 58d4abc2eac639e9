package jobs_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/sqlite"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/jobs"
)

// wait bounds every condition a test waits on.
const wait = 20 * time.Second

// testArgs is the one job kind of these tests. Tests are isolated by queue
// name, not kind: every Queue registers the same worker kind but works only
// its test's queue.
type testArgs struct {
	N   int    `json:"n"`
	Tag string `json:"tag"`
}

func (testArgs) Kind() string { return "jobs_test" }

type testWorker struct {
	river.WorkerDefaults[testArgs]
	rec *recorder
}

func (w *testWorker) Work(_ context.Context, job *river.Job[testArgs]) error {
	w.rec.record(job.Args.N)
	return nil
}

// recorder counts the runs of each job number and closes done once want
// distinct numbers have run.
type recorder struct {
	mu   sync.Mutex
	runs map[int]int
	at   map[int]time.Time
	want int
	done chan struct{}
}

func newRecorder(want int) *recorder {
	return &recorder{runs: map[int]int{}, at: map[int]time.Time{}, want: want, done: make(chan struct{})}
}

func (r *recorder) record(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[n]++
	if r.runs[n] == 1 {
		r.at[n] = time.Now()
		if len(r.runs) == r.want {
			close(r.done)
		}
	}
}

func (r *recorder) snapshot() map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int]int, len(r.runs))
	for n, c := range r.runs {
		out[n] = c
	}
	return out
}

func (r *recorder) ranAt(n int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[n]
}

func (r *recorder) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(wait):
		t.Fatalf("after %s only %d of %d jobs ran: %v", wait, len(r.snapshot()), r.want, r.snapshot())
	}
}

// env is one isolated database (a SQLite file, or a queue name of its own
// in the shared Postgres database) on which tests open Queues, as if they
// were restarts or replicas of one server.
type env struct {
	// queue is the River queue this env's jobs go to.
	queue string
	// newQueue opens a Queue on the env's database.
	newQueue func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error)
	// count counts the env's jobs in the given state in the database.
	count func(ctx context.Context, state string) (int, error)
}

// open opens a Queue working env.queue with a worker recording into rec
// (or an insert-only Queue when rec is nil), starts it when start is set,
// and stops it in cleanup.
func (e env) open(t *testing.T, rec *recorder, start bool) *jobs.Queue {
	t.Helper()
	cfg := jobs.Config{Logger: testLogger(t), TestOnly: true}
	if rec != nil {
		cfg.Workers = river.NewWorkers()
		river.AddWorker(cfg.Workers, &testWorker{rec: rec})
		cfg.Queues = map[string]river.QueueConfig{e.queue: {MaxWorkers: 10}}
	}
	q, err := e.newQueue(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })
	if start {
		require.NoError(t, q.Start(context.Background()))
	}
	return q
}

// insert inserts job n into env.queue and reports whether it was new.
func (e env) insert(t *testing.T, q *jobs.Queue, n int, tag string, opts *river.InsertOpts) bool {
	t.Helper()
	if opts == nil {
		opts = &river.InsertOpts{}
	}
	opts.Queue = e.queue
	inserted, err := q.Insert(context.Background(), testArgs{N: n, Tag: tag}, opts)
	require.NoError(t, err)
	return inserted
}

// waitState waits until the database has n jobs in state in env.queue.
// Tests wait for "completed" after their workers ran: River records the
// completion after the worker returns.
func (e env) waitState(t *testing.T, state string, n int) {
	t.Helper()
	var (
		have    int
		lastErr error
	)
	ok := assert.Eventually(t, func() bool {
		have, lastErr = e.count(context.Background(), state)
		return lastErr == nil && have == n
	}, wait, 10*time.Millisecond)
	require.True(t, ok, "want %d %s jobs in queue %s, have %d (error: %v)", n, state, e.queue, have, lastErr)
}

// insertConcurrently inserts jobs 0..count-1 into queue, each from its own
// goroutine through the Queue that via picks.
func insertConcurrently(t *testing.T, count int, via func(n int) *jobs.Queue, queue string) {
	t.Helper()
	var wg sync.WaitGroup
	inserted := make([]bool, count)
	errs := make([]error, count)
	for n := range count {
		wg.Go(func() {
			inserted[n], errs[n] = via(n).Insert(context.Background(), testArgs{N: n}, &river.InsertOpts{Queue: queue})
		})
	}
	wg.Wait()
	for n := range count {
		require.NoError(t, errs[n], "insert job %d", n)
		require.True(t, inserted[n], "insert job %d", n)
	}
}

type backend struct {
	name string
	// newEnv returns an env on a database that other subtests may share.
	newEnv func(t *testing.T) env
	// newIsolatedEnv returns an env on a database of its own, for tests
	// that must not see other tests' River clients: only the leader
	// moves scheduled jobs to available, and the leader may otherwise be
	// another test's client, stopping at any moment.
	newIsolatedEnv func(t *testing.T) env
}

// pgDatabase is the Postgres database shared by a test's subtests.
type pgDatabase struct {
	ownerURL string
	appURL   string
	store    *postgres.Store
}

func newPGDatabase(t *testing.T) *pgDatabase {
	t.Helper()
	ownerURL := pgtest.NewDatabase(t)
	s, err := postgres.Open(context.Background(), ownerURL, postgres.Options{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	appURL, err := postgres.AppURLFor(ownerURL)
	require.NoError(t, err)
	return &pgDatabase{ownerURL: ownerURL, appURL: appURL, store: s}
}

// newEnv isolates by queue name. Every Queue gets an app-role pool of its
// own, as separate server processes would.
func (db *pgDatabase) newEnv(t *testing.T) env {
	queue := newQueueName()
	return env{
		queue: queue,
		newQueue: func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
			pool, err := pgxpool.New(ctx, db.appURL)
			if err != nil {
				return nil, err
			}
			// Registered before the Queue's Stop, so it runs after it.
			t.Cleanup(pool.Close)
			return jobs.OpenPostgres(ctx, db.ownerURL, pool, cfg)
		},
		count: func(ctx context.Context, state string) (int, error) {
			var n int
			err := db.store.Pool().QueryRow(ctx,
				`SELECT count(*) FROM river_job WHERE queue = $1 AND state = $2`, queue, state).Scan(&n)
			return n, err
		},
	}
}

func newSQLiteEnv(t *testing.T) env {
	return sqliteEnvAt(filepath.Join(t.TempDir(), "warden.db"))
}

func sqliteEnvAt(path string) env {
	queue := newQueueName()
	return env{
		queue: queue,
		newQueue: func(ctx context.Context, cfg jobs.Config) (*jobs.Queue, error) {
			return jobs.OpenSQLite(ctx, path, cfg)
		},
		count: func(ctx context.Context, state string) (int, error) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_query_only=1")
			if err != nil {
				return 0, err
			}
			defer func() { _ = db.Close() }()
			var n int
			err = db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE queue = ? AND state = ?`, queue, state).Scan(&n)
			return n, err
		},
	}
}

func newQueueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test_" + hex.EncodeToString(b)
}

// testLogger shows River's warnings and errors in the test output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestQueue runs every behaviour against both backends. The Postgres
// subtests share one database and isolate themselves by queue name, except
// SurvivesRestart, which needs one of its own (see newIsolatedEnv).
func TestQueue(t *testing.T) {
	t.Parallel()
	pg := newPGDatabase(t)
	backends := []backend{
		{name: "postgres", newEnv: pg.newEnv, newIsolatedEnv: func(t *testing.T) env { return newPGDatabase(t).newEnv(t) }},
		{name: "sqlite", newEnv: newSQLiteEnv, newIsolatedEnv: newSQLiteEnv},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			t.Run("RunsOnce", func(t *testing.T) {
				t.Parallel()
				testRunsOnce(t, b.newEnv(t))
			})
			t.Run("SurvivesRestart", func(t *testing.T) {
				t.Parallel()
				testSurvivesRestart(t, b.newIsolatedEnv)
			})
			t.Run("Replicas", func(t *testing.T) {
				t.Parallel()
				testReplicas(t, b.newEnv(t))
			})
			t.Run("Unique", func(t *testing.T) {
				t.Parallel()
				testUnique(t, b.newEnv(t))
			})
		})
	}
	t.Run("postgres/AppRole", func(t *testing.T) {
		t.Parallel()
		testAppRole(t, pg)
	})
	t.Run("sqlite/ConcurrentStoreWrites", func(t *testing.T) {
		t.Parallel()
		testConcurrentStoreWrites(t)
	})
}

func testRunsOnce(t *testing.T, e env) {
	rec := newRecorder(1)
	q := e.open(t, rec, true)
	require.True(t, e.insert(t, q, 1, "", nil))
	rec.wait(t)
	e.waitState(t, "completed", 1)
	require.NoError(t, q.Stop(context.Background()))
	require.Equal(t, map[int]int{1: 1}, rec.snapshot())
}

// testSurvivesRestart inserts a job that the first Queue does not run,
// stops that Queue, and expects a new Queue on the same database to run it
// exactly once (and not before its scheduled time).
func testSurvivesRestart(t *testing.T, newEnv func(t *testing.T) env) {
	for _, tc := range []struct {
		name string
		// leader starts the first Queue, working another queue only, after
		// the insert, and stops it once it has, as River's leader, moved
		// the scheduled job to available.
		leader    bool
		scheduled time.Duration
	}{
		{name: "InsertedWhileNoWorkerRan"},
		{name: "ScheduledThenLeaderStopped", leader: true, scheduled: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			var first *jobs.Queue
			if tc.leader {
				other := e
				other.queue = newQueueName()
				first = other.open(t, newRecorder(1), false)
			} else {
				first = e.open(t, nil, false)
			}
			opts := &river.InsertOpts{}
			scheduledAt := time.Now()
			if tc.scheduled > 0 {
				scheduledAt = scheduledAt.Add(tc.scheduled)
				opts.ScheduledAt = scheduledAt
			}
			require.True(t, e.insert(t, first, 1, "", opts))
			if tc.leader {
				require.NoError(t, first.Start(ctx))
				// The leader makes jobs due within 5 s available as soon as
				// it is elected. Waiting for that also waits out the
				// election: a Queue stopped while its election query is in
				// flight can leave a leadership that nobody resigns, and
				// scheduled jobs then wait 15 s for it to expire.
				e.waitState(t, "available", 1)
			}
			require.NoError(t, first.Stop(ctx))

			rec := newRecorder(1)
			second := e.open(t, rec, true)
			rec.wait(t)
			e.waitState(t, "completed", 1)
			require.NoError(t, second.Stop(ctx))
			require.Equal(t, map[int]int{1: 1}, rec.snapshot())
			require.False(t, rec.ranAt(1).Before(scheduledAt), "ran at %s, before its scheduled time %s", rec.ranAt(1), scheduledAt)
		})
	}
}

// testReplicas runs two Queues on one database, inserts through both, and
// expects every job to run exactly once in total.
func testReplicas(t *testing.T, e env) {
	const jobCount = 50
	rec := newRecorder(jobCount)
	qs := []*jobs.Queue{e.open(t, rec, true), e.open(t, rec, true)}
	insertConcurrently(t, jobCount, func(n int) *jobs.Queue { return qs[n%2] }, e.queue)
	rec.wait(t)
	e.waitState(t, "completed", jobCount)
	for _, q := range qs {
		require.NoError(t, q.Stop(context.Background()))
	}
	runs := rec.snapshot()
	require.Len(t, runs, jobCount)
	for n, c := range runs {
		require.Equal(t, 1, c, "job %d ran %d times", n, c)
	}
}

func testUnique(t *testing.T, e env) {
	q := e.open(t, nil, false)
	unique := func() *river.InsertOpts { return &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}} }
	tag := e.queue // unique keys are per kind and args, not per queue
	require.True(t, e.insert(t, q, 1, tag, unique()), "first insert")
	require.False(t, e.insert(t, q, 1, tag, unique()), "same args again")
	require.True(t, e.insert(t, q, 2, tag, unique()), "other args")
	require.True(t, e.insert(t, q, 1, tag, nil), "same args without UniqueOpts")
}

// testAppRole checks that River works through the store's app-role pool and
// that the app role owns none of River's schema and cannot change it.
func testAppRole(t *testing.T, pg *pgDatabase) {
	ctx := context.Background()
	pool := pg.store.Pool()
	var user string
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_user`).Scan(&user))
	require.Equal(t, postgres.AppRole, user)

	queue := newQueueName()
	rec := newRecorder(1)
	workers := river.NewWorkers()
	river.AddWorker(workers, &testWorker{rec: rec})
	q, err := jobs.OpenPostgres(ctx, pg.ownerURL, pool, jobs.Config{
		Logger: testLogger(t), Queues: map[string]river.QueueConfig{queue: {MaxWorkers: 1}}, TestOnly: true, Workers: workers,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Stop(ctx)) })
	require.NoError(t, q.Start(ctx))
	_, err = q.Insert(ctx, testArgs{N: 1}, &river.InsertOpts{Queue: queue})
	require.NoError(t, err)
	rec.wait(t)

	// River's LISTEN connections are the app role's: asked as the owner (a
	// superuser here), which sees every session's query, not only its own.
	owner, err := pgx.Connect(ctx, pg.ownerURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	var listeners []string
	require.Eventually(t, func() bool {
		rows, err := owner.Query(ctx, `SELECT DISTINCT usename::text FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN %river%'`)
		if err != nil {
			return false
		}
		listeners, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err == nil && len(listeners) > 0
	}, wait, 10*time.Millisecond)
	require.Equal(t, []string{postgres.AppRole}, listeners)
	// The job's completion was written by the app role.
	require.Eventually(t, func() bool {
		var state string
		err := pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE queue = $1`, queue).Scan(&state)
		return err == nil && state == "completed"
	}, wait, 10*time.Millisecond)

	// Every River relation is owned by another role. The app role may
	// change the rows of the tables River uses at run time, and nothing
	// else: a River upgrade adding a table fails here until it is granted
	// or listed as not needed.
	notNeeded := map[string]bool{"river_migration": true, "river_notification": true}
	rows, err := pool.Query(ctx, `SELECT c.relname::text, c.relkind::text, pg_get_userbyid(c.relowner)::text
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relname LIKE 'river\_%' AND c.relkind IN ('r', 'p', 'S')`)
	require.NoError(t, err)
	type relation struct{ name, kind, owner string }
	var rels []relation
	for rows.Next() {
		var r relation
		require.NoError(t, rows.Scan(&r.name, &r.kind, &r.owner))
		rels = append(rels, r)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, rels)
	for _, r := range rels {
		require.NotEqual(t, postgres.AppRole, r.owner, "%s is owned by the app role", r.name)
		if r.kind == "S" {
			continue
		}
		for _, priv := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
			var has bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT has_table_privilege($1, $2, $3)`,
				postgres.AppRole, r.name, priv).Scan(&has))
			require.Equal(t, !notNeeded[r.name], has, "%s on %s", priv, r.name)
		}
	}
	_, err = pool.Exec(ctx, `DELETE FROM river_migration`)
	require.ErrorContains(t, err, "permission denied")
	_, err = pool.Exec(ctx, `ALTER TABLE river_job ADD COLUMN x int`)
	require.ErrorContains(t, err, "must be owner")
	_, err = pool.Exec(ctx, `TRUNCATE river_job`)
	require.ErrorContains(t, err, "permission denied")
}

// testConcurrentStoreWrites works and inserts jobs on a SQLite file while
// the store writes to the same file through its own writer connection:
// two writers that must queue on SQLite's lock, never fail with
// SQLITE_BUSY or deadlock.
func testConcurrentStoreWrites(t *testing.T) {
	const jobCount, writes = 50, 50
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	e := sqliteEnvAt(path)
	rec := newRecorder(jobCount)
	q := e.open(t, rec, true)

	tenant := storetest.NewTenant()
	var wg sync.WaitGroup
	errs := make([]error, writes)
	for i := range writes {
		wg.Go(func() {
			errs[i] = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, storetest.NewObject("Agent", "default", fmt.Sprintf("a%d", i), nil, nil))
				return err
			})
		})
	}
	insertConcurrently(t, jobCount, func(int) *jobs.Queue { return q }, e.queue)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "store write %d", i)
	}
	rec.wait(t)
	e.waitState(t, "completed", jobCount)
	require.NoError(t, q.Stop(ctx))
	for n, c := range rec.snapshot() {
		require.Equal(t, 1, c, "job %d ran %d times", n, c)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	workers := river.NewWorkers()
	for _, tc := range []struct {
		name    string
		cfg     jobs.Config
		wantErr string
	}{
		{name: "Zero", cfg: jobs.Config{}},
		{name: "WorkersOnly", cfg: jobs.Config{Workers: workers}},
		{name: "NegativeCooldown", cfg: jobs.Config{FetchCooldown: -time.Second}, wantErr: "Config.FetchCooldown"},
		{name: "PollBelowCooldown", cfg: jobs.Config{FetchCooldown: time.Second, FetchPollInterval: time.Millisecond},
			wantErr: "Config.FetchPollInterval"},
		{name: "JobTimeout", cfg: jobs.Config{JobTimeout: -2}, wantErr: "Config.JobTimeout"},
		{name: "MaxAttempts", cfg: jobs.Config{MaxAttempts: -1}, wantErr: "Config.MaxAttempts"},
		{name: "NegativeRescue", cfg: jobs.Config{RescueStuckJobsAfter: -time.Second}, wantErr: "Config.RescueStuckJobsAfter"},
		{name: "RescueBeforeTimeout", cfg: jobs.Config{RescueStuckJobsAfter: time.Minute, JobTimeout: time.Hour},
			wantErr: "Config.RescueStuckJobsAfter"},
		{name: "QueuesWithoutWorkers", cfg: jobs.Config{Queues: map[string]river.QueueConfig{"a": {MaxWorkers: 1}}},
			wantErr: "Config.Workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	cfg := jobs.Config{Workers: river.NewWorkers()}.WithDefaults()
	require.Equal(t, jobs.DefaultFetchCooldown, cfg.FetchCooldown)
	require.Equal(t, jobs.DefaultFetchPollInterval, cfg.FetchPollInterval)
	require.Equal(t, map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: jobs.DefaultMaxWorkers}}, cfg.Queues)
	require.NotNil(t, cfg.Logger)
	require.Equal(t, jobs.DefaultRescueStuckJobsAfter, cfg.RescueStuckJobsAfter)
	require.Equal(t, 2*time.Hour, jobs.Config{JobTimeout: 2 * time.Hour}.WithDefaults().RescueStuckJobsAfter,
		"never rescued before its timeout")
	require.Nil(t, jobs.Config{}.WithDefaults().Queues, "no workers, no queues: insert only")
	fast := jobs.Config{FetchPollInterval: 5 * time.Millisecond}.WithDefaults()
	require.Equal(t, 5*time.Millisecond, fast.FetchCooldown, "the cooldown never exceeds the poll interval")
	slow := jobs.Config{FetchCooldown: time.Second}.WithDefaults()
	require.Equal(t, time.Second, slow.FetchPollInterval, "the poll interval is never below the cooldown")
}
