package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/warden-dev/warden/app/store"
)

// ExecutionArgs runs one Execution (app/execution's Service.Run).
type ExecutionArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Kind names the job.
func (ExecutionArgs) Kind() string { return "warden.execution.run" }

// ExecutionJobTimeout bounds one run, approvals it waits for included; a
// run still going then is retried and resumes through the gateway's
// idempotency.
const ExecutionJobTimeout = time.Hour

// ExecutionRunner does the execution job's work (app/execution's Service).
// Run must be safe to repeat: a rescued or retried job runs it again.
type ExecutionRunner interface {
	Run(ctx context.Context, tenant, namespace, name string) error
}

// Executions schedules and works the execution jobs. Build it with
// NewExecutions, register its worker in the Queue's Config, then Bind the
// runner and SetQueue once both exist. It implements app/execution's
// Queue.
type Executions struct {
	runner atomic.Pointer[ExecutionRunner]
	queue  atomic.Pointer[Queue]
}

// errNoExecutionRunner is returned by a job that runs before Bind.
var errNoExecutionRunner = errors.New("jobs: execution runner not bound yet")

// NewExecutions returns the execution jobs and registers their worker in
// workers.
func NewExecutions(workers *river.Workers) *Executions {
	e := &Executions{}
	river.AddWorker(workers, &executionWorker{e: e})
	return e
}

// Bind sets the runner the worker calls.
func (e *Executions) Bind(r ExecutionRunner) { e.runner.Store(&r) }

// SetQueue sets the queue jobs are inserted into.
func (e *Executions) SetQueue(q *Queue) { e.queue.Store(q) }

// EnqueueExecution schedules the run of an execution. Jobs are unique by
// execution: however often it is scheduled, one job runs it.
func (e *Executions) EnqueueExecution(ctx context.Context, tenant, namespace, name string) error {
	q := e.queue.Load()
	if q == nil {
		return errors.New("jobs: no queue set")
	}
	_, err := q.Insert(ctx, ExecutionArgs{Tenant: tenant, Namespace: namespace, Name: name}, executionOpts())
	return err
}

// EnqueueExecutionTx schedules the run in tx, the store transaction that
// records the execution, so that both commit together: a run is never
// recorded without its job, on either store (the Queue runs on the store's
// database). A tx that is no SQL transaction of the store (store.DriverTx)
// reports false, doing nothing, and the caller schedules with
// EnqueueExecution after its commit.
func (e *Executions) EnqueueExecutionTx(ctx context.Context, tx any, tenant, namespace, name string) (bool, error) {
	q := e.queue.Load()
	stx, ok := tx.(store.Tx)
	if _, sql := tx.(store.DriverTx); q == nil || !ok || !sql {
		return false, nil
	}
	// A job already there for this execution (unique by args) schedules
	// it just as well.
	if _, err := q.InsertStoreTx(ctx, stx, ExecutionArgs{Tenant: tenant, Namespace: namespace, Name: name}, executionOpts()); err != nil {
		return false, err
	}
	return true, nil
}

// executionOpts are the insert options of an execution job.
func executionOpts() *river.InsertOpts {
	return &river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type executionWorker struct {
	river.WorkerDefaults[ExecutionArgs]
	e *Executions
}

// Work runs the execution; a failed run is recorded by the runner and is
// not a job error.
func (w *executionWorker) Work(ctx context.Context, job *river.Job[ExecutionArgs]) error {
	r := w.e.runner.Load()
	if r == nil {
		return errNoExecutionRunner
	}
	return (*r).Run(ctx, job.Args.Tenant, job.Args.Namespace, job.Args.Name)
}

// Timeout is ExecutionJobTimeout.
func (w *executionWorker) Timeout(*river.Job[ExecutionArgs]) time.Duration {
	return ExecutionJobTimeout
}
