package gateway_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/jobs"
)

// noQueue takes the approval jobs of a process that is about to be killed:
// they never reach River, as when the process dies after its decision
// commits and before the job is inserted or worked.
type noQueue struct{}

func (noQueue) Resume(context.Context, string, string, string) error { return nil }
func (noQueue) Expire(context.Context, string, string, string, time.Time) error {
	return nil
}

// leaveRunning inserts the approval job a killed process was working and
// leaves it as that process left it: running, attempt 1. River rescues
// such a job only after its timeout, and while it is there its uniqueness
// keeps another job for the same call from being queued.
func leaveRunning(t *testing.T, storeURL string, job func(a *jobs.Approvals) error) {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	a := jobs.NewApprovals(river.NewWorkers())
	q, err := openQueue(t, st, storeURL, jobs.Config{}) // insert only
	require.NoError(t, err)
	a.SetQueue(q)
	require.NoError(t, job(a))
	require.NoError(t, q.Stop(ctx))

	const running = `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = %s WHERE kind LIKE 'warden.%%'`
	if path, ok := strings.CutPrefix(storeURL, "sqlite://"); ok {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer func() { _ = db.Close() }()
		res, err := db.ExecContext(ctx, strings.Replace(running, "%s", "datetime('now', 'subsec')", 1))
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		return
	}
	conn, err := pgx.Connect(ctx, storeURL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	tag, err := conn.Exec(ctx, strings.Replace(running, "%s", "now()", 1))
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// An approver approves a paused call and the process is killed before the
// call is claimed, leaving its resume job running. After the restart the
// approver (or a webhook) sends the decision again and is told it was
// made; the call must then run within seconds, once, not an hour later
// when River would rescue the job.
func TestApprovedCallResumesAfterACrash(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			storeURL := url(t)
			ts := newToolServer(t)
			st, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			first := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, cfg: func(c *server.Config) { c.Queue = noQueue{} }})
			first.apply(fixture(ts.URL))
			r := first.pending(999)
			d := first.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
			require.Equal(t, http.StatusOK, d.status, string(d.raw))
			first.stop()
			require.NoError(t, st.Close())
			leaveRunning(t, storeURL, func(a *jobs.Approvals) error { return a.Resume(ctx, "default", "default", r.name()) })

			st2, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st2.Close() })
			second := start(t, envOptions{st: st2, storeURL: storeURL, tools: ts, admin: first.admin, river: true})
			again := second.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
			require.Equal(t, http.StatusConflict, again.status, string(again.raw))
			got := second.wait(r.name())
			require.Equal(t, "Succeeded", got.phase(), string(got.raw))
			require.Equal(t, 1, ts.count("/refund"), "the tool ran exactly once")
		})
	}
}

// The same for expiry: the process working an approval's expiry job is
// killed; after the restart the overdue approval expires at once.
func TestOverdueApprovalExpiresAfterACrash(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			storeURL := url(t)
			ts := newToolServer(t)
			st, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			first := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, cfg: func(c *server.Config) { c.Queue = noQueue{} }})
			first.apply(fixture(ts.URL))
			r := first.pending(999)
			first.stop()
			require.NoError(t, st.Close())
			leaveRunning(t, storeURL, func(a *jobs.Approvals) error {
				return a.Expire(ctx, "default", "default", approvalOf(r.name()), time.Now())
			})

			// The process comes back after the approval's deadline (24 h).
			later := func() time.Time { return time.Now().Add(25 * time.Hour) }
			st2, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st2.Close() })
			second := start(t, envOptions{st: st2, storeURL: storeURL, tools: ts, admin: first.admin, river: true,
				cfg: func(c *server.Config) { c.Now = later }})
			// A caller waiting on it gets ApprovalDenied naming the
			// expired record.
			got := second.wait(r.name())
			require.Equal(t, http.StatusForbidden, got.status, string(got.raw))
			require.Equal(t, "ApprovalDenied", got.code(), string(got.raw))
			require.Equal(t, "Expired", got.body["error"].(map[string]any)["details"].(map[string]any)["phase"], string(got.raw))
			rec := second.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+r.name(), nil)
			require.Equal(t, "Expired", rec.phase(), string(rec.raw))
			require.Equal(t, 0, ts.count("/refund"))
		})
	}
}

// A replica dies after an approval and is never restarted: the periodic
// sweep, which runs once per cluster on another replica, runs the call.
func TestPeriodicSweepResumesForADeadReplica(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			storeURL := url(t)
			ts := newToolServer(t)
			st, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			dying := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, cfg: func(c *server.Config) { c.Queue = noQueue{} }})
			dying.apply(fixture(ts.URL))
			alive := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, admin: dying.admin, river: true})
			r := dying.pending(999)
			d := dying.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
			require.Equal(t, http.StatusOK, d.status, string(d.raw))
			dying.stop()
			require.Equal(t, "AwaitingApproval", do(t, http.MethodGet, alive.gwURL+"/v1/tool-calls/"+r.name(), alive.bot(), nil, nil).phase())

			require.NoError(t, alive.srv.SweepApprovals(ctx))
			got := alive.wait(r.name())
			require.Equal(t, "Succeeded", got.phase(), string(got.raw))
			require.Equal(t, 1, ts.count("/refund"))
		})
	}
}

// lostAfterCommit is the approval queue of a process that dies right after
// a decision commits: a job scheduled after the commit is never inserted.
type lostAfterCommit struct{ *jobs.Approvals }

func (lostAfterCommit) Resume(context.Context, string, string, string) error {
	return errors.New("the process died")
}

// failingCommit fails the write transaction that changes the object named
// by target after its writes ran, as a crash before COMMIT would. Other
// writes (audit records, the recorder, background jobs) commit as usual, so
// the failure lands on the decision whatever else runs at the same time.
type failingCommit struct {
	store.Store
	target atomic.Pointer[resource.Key]
}

func (s *failingCommit) Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		k := s.target.Load()
		var before string
		if k != nil {
			if o, err := tx.ResourceGet(ctx, *k); err == nil {
				before = o.Metadata.ResourceVersion
			}
		}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if k == nil {
			return nil
		}
		if o, err := tx.ResourceGet(ctx, *k); err == nil && o.Metadata.ResourceVersion != before && s.target.CompareAndSwap(k, nil) {
			return errors.New("crashed before commit")
		}
		return nil
	})
}

// Pool is the Postgres store's pool, for the River queue.
func (s *failingCommit) Pool() *pgxpool.Pool { return s.Store.(*postgres.Store).Pool() }

// On Postgres an approval and its resume job commit in one transaction:
// the job is there however soon after the commit the process dies, and is
// gone with a decision that never committed.
func TestDecisionAndResumeJobCommitTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	storeURL := pgtest.NewDatabase(t)
	ts := newToolServer(t)
	pg, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Close() })
	st := &failingCommit{Store: pg}
	e := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, river: true,
		queue: func(a *jobs.Approvals) gateway.Queue { return lostAfterCommit{a} }})
	e.apply(fixture(ts.URL))
	r := e.pending(999)
	jobsFor := func() int {
		var n int
		require.NoError(t, pg.(*postgres.Store).Pool().QueryRow(ctx,
			`SELECT count(*) FROM river_job WHERE kind = $1 AND args->>'call' = $2`, jobs.ResumeArgs{}.Kind(), r.name()).Scan(&n))
		return n
	}

	st.target.Store(&resource.Key{Kind: resource.KindApproval, Namespace: "default", Name: approvalOf(r.name())})
	d := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
	require.Equal(t, http.StatusInternalServerError, d.status, string(d.raw))
	require.Equal(t, 0, jobsFor(), "no job for a decision that never committed")

	d = e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
	require.Equal(t, http.StatusOK, d.status, string(d.raw))
	got := e.wait(r.name())
	require.Equal(t, "Succeeded", got.phase(), string(got.raw))
	require.Equal(t, 1, jobsFor())
	require.Equal(t, 1, ts.count("/refund"))
}
