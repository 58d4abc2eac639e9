package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/warden-dev/warden/app/store"
)

// ResumeArgs resumes an approved tool call: the gateway runs it once.
type ResumeArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Call      string `json:"call"`
}

// Kind names the job.
func (ResumeArgs) Kind() string { return "warden.toolcall.resume" }

// ExpireArgs expires an approval at its deadline unless decided before.
type ExpireArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Approval  string `json:"approval"`
}

// Kind names the job.
func (ExpireArgs) Kind() string { return "warden.approval.expire" }

// ApprovalJobTimeout bounds a resume or expiry job. Both are a few store
// writes: Resume returns once the call is claimed, before its tool runs.
const ApprovalJobTimeout = 30 * time.Second

// ApprovalRunner does the approval jobs' work (the tool gateway). Both
// methods must be safe to repeat and to run concurrently for one call or
// approval: a rescued job runs again, and the gateway's start-up sweep does
// the same work without a job.
type ApprovalRunner interface {
	// Resume claims an approved call and starts it, returning once the
	// claim is recorded (within ApprovalJobTimeout).
	Resume(ctx context.Context, tenant, namespace, call string) error
	Expire(ctx context.Context, tenant, namespace, approval string) error
}

// Approvals schedules and works the approval jobs. Build it with
// NewApprovals, register its workers in the Queue's Config, then Bind the
// runner and SetQueue once both exist. It implements the gateway's Queue.
type Approvals struct {
	runner atomic.Pointer[ApprovalRunner]
	queue  atomic.Pointer[Queue]
}

// errUnbound is returned by a job that runs before Bind.
var errUnbound = errors.New("jobs: approval runner not bound yet")

// NewApprovals returns the approval jobs and registers their workers in
// workers.
func NewApprovals(workers *river.Workers) *Approvals {
	a := &Approvals{}
	river.AddWorker(workers, &resumeWorker{a: a})
	river.AddWorker(workers, &expireWorker{a: a})
	return a
}

// Bind sets the runner the workers call.
func (a *Approvals) Bind(r ApprovalRunner) { a.runner.Store(&r) }

// SetQueue sets the queue jobs are inserted into.
func (a *Approvals) SetQueue(q *Queue) { a.queue.Store(q) }

func (a *Approvals) run() (ApprovalRunner, error) {
	r := a.runner.Load()
	if r == nil {
		return nil, errUnbound
	}
	return *r, nil
}

func (a *Approvals) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	q := a.queue.Load()
	if q == nil {
		return errors.New("jobs: no queue set")
	}
	_, err := q.Insert(ctx, args, opts)
	return err
}

// Resume schedules the resumption of an approved call. It is unique by
// call: however many times it is scheduled, one job runs, and the gateway
// claims the call with a precondition besides.
func (a *Approvals) Resume(ctx context.Context, tenant, namespace, call string) error {
	return a.insert(ctx, ResumeArgs{Tenant: tenant, Namespace: namespace, Call: call}, resumeOpts())
}

// ResumeTx schedules the resumption of an approved call in tx, the store
// transaction that records the decision, so that the decision and its job
// commit together on either store (the Queue runs on the store's
// database): no crash can leave an approved call without a job. A tx that
// is no SQL transaction of the store (store.DriverTx) reports false, doing
// nothing, and the caller schedules with Resume after its commit.
func (a *Approvals) ResumeTx(ctx context.Context, tx any, tenant, namespace, call string) (bool, error) {
	q := a.queue.Load()
	stx, ok := tx.(store.Tx)
	if _, sql := tx.(store.DriverTx); q == nil || !ok || !sql {
		return false, nil
	}
	// A job already there for this call (unique by args) resumes it just
	// as well.
	if _, err := q.InsertStoreTx(ctx, stx, ResumeArgs{Tenant: tenant, Namespace: namespace, Call: call}, resumeOpts()); err != nil {
		return false, err
	}
	return true, nil
}

// resumeOpts are the insert options of a resume job.
func resumeOpts() *river.InsertOpts {
	return &river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Expire schedules the expiry of an approval at its deadline.
func (a *Approvals) Expire(ctx context.Context, tenant, namespace, approval string, at time.Time) error {
	return a.insert(ctx, ExpireArgs{Tenant: tenant, Namespace: namespace, Approval: approval},
		&river.InsertOpts{ScheduledAt: at, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}})
}

type resumeWorker struct {
	river.WorkerDefaults[ResumeArgs]
	a *Approvals
}

// Work runs the approved call; the gateway makes a second run a no-op.
func (w *resumeWorker) Work(ctx context.Context, job *river.Job[ResumeArgs]) error {
	r, err := w.a.run()
	if err != nil {
		return err
	}
	return r.Resume(ctx, job.Args.Tenant, job.Args.Namespace, job.Args.Call)
}

// Timeout is short: the runner returns once it has claimed the call and
// runs the tool on its own (the gateway bounds each tool call itself). A
// job left running by a killed process is rescued once this timeout and
// Config.RescueStuckJobsAfter have passed.
func (w *resumeWorker) Timeout(*river.Job[ResumeArgs]) time.Duration { return ApprovalJobTimeout }

type expireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	a *Approvals
}

// Work expires the approval if it is still pending and due.
func (w *expireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	r, err := w.a.run()
	if err != nil {
		return err
	}
	return r.Expire(ctx, job.Args.Tenant, job.Args.Namespace, job.Args.Approval)
}

// Timeout is short, as the resume job's is.
func (w *expireWorker) Timeout(*river.Job[ExpireArgs]) time.Duration { return ApprovalJobTimeout }
