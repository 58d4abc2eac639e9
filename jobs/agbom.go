package jobs

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/riverqueue/river"
)

// AgBOMArgs regenerates the AgBOM of one compiled manifest; the job of
// every AgentCompiled event, and of every change of a resource manifests
// resolve (app/agbom's Watch).
type AgBOMArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Manifest  string `json:"manifest"`
	// Cause names what asked for the refresh, so that two causes are two
	// jobs (two compiles within one second among them): the manifest's
	// resourceVersion after a compile, or "<Kind>/<name>@<resourceVersion>"
	// of a changed dependency.
	Cause string `json:"cause"`
	// CompiledAt is the AgentCompiled event's time (RFC 3339), recorded
	// as the BOM's timestamp; empty after a dependency change.
	CompiledAt string `json:"compiledAt"`
}

// Kind names the job.
func (AgBOMArgs) Kind() string { return "warden.agbom.refresh" }

// AgBOMRefresher does the AgBOM job's work (app/agbom's Service).
type AgBOMRefresher interface {
	RefreshManifest(ctx context.Context, tenant, namespace, manifest, compiledAt string) error
}

// AgBOMs schedules and works the AgBOM jobs. Build it with NewAgBOMs,
// register its worker in the Queue's Config, then Bind the refresher and
// SetQueue once both exist. It implements app/agbom's Queue.
type AgBOMs struct {
	refresher atomic.Pointer[AgBOMRefresher]
	queue     atomic.Pointer[Queue]
}

// errNoRefresher is returned by a job that runs before Bind.
var errNoRefresher = errors.New("jobs: AgBOM refresher not bound yet")

// NewAgBOMs returns the AgBOM jobs and registers their worker in workers.
func NewAgBOMs(workers *river.Workers) *AgBOMs {
	a := &AgBOMs{}
	river.AddWorker(workers, &agbomWorker{a: a})
	return a
}

// Bind sets the refresher the worker calls.
func (a *AgBOMs) Bind(r AgBOMRefresher) { a.refresher.Store(&r) }

// SetQueue sets the queue jobs are inserted into.
func (a *AgBOMs) SetQueue(q *Queue) { a.queue.Store(q) }

// EnqueueAgBOM schedules the regeneration of a manifest's AgBOM. Jobs are
// unique by their arguments (the cause among them), so one event runs one
// job
// however often it is scheduled; the refresh is idempotent besides (an
// unchanged BOM is neither written nor announced again), so a retry is
// harmless.
func (a *AgBOMs) EnqueueAgBOM(ctx context.Context, tenant, namespace, manifest, cause, compiledAt string) error {
	q := a.queue.Load()
	if q == nil {
		return errors.New("jobs: no queue set")
	}
	args := AgBOMArgs{Tenant: tenant, Namespace: namespace, Manifest: manifest, Cause: cause, CompiledAt: compiledAt}
	_, err := q.Insert(ctx, args,
		&river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

type agbomWorker struct {
	river.WorkerDefaults[AgBOMArgs]
	a *AgBOMs
}

// Work regenerates the manifest's AgBOM and, when it changed, stores it and
// emits AgBOMUpdated.
func (w *agbomWorker) Work(ctx context.Context, job *river.Job[AgBOMArgs]) error {
	r := w.a.refresher.Load()
	if r == nil {
		return errNoRefresher
	}
	return (*r).RefreshManifest(ctx, job.Args.Tenant, job.Args.Namespace, job.Args.Manifest, job.Args.CompiledAt)
}
