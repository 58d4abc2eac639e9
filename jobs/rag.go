package jobs

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueRAG is the River queue of the RAG index refreshes, worked by every
// process that serves the RAG API, so that a refresh a client triggered
// survives a restart and runs on whichever replica fetches it.
const QueueRAG = "rag"

// RAGQueueConfig is the configuration of QueueRAG: a refresh fetches
// documents over the network and writes many chunks, so few run at once.
func RAGQueueConfig() river.QueueConfig { return river.QueueConfig{MaxWorkers: 2} }

// RAGRefreshArgs refreshes one RAGIndex from its KnowledgeSources.
type RAGRefreshArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Index     string `json:"index"`
}

// Kind names the job.
func (RAGRefreshArgs) Kind() string { return "warden.rag.refresh" }

// InsertOpts puts the job on QueueRAG, unique by its arguments among the
// jobs not finished yet: a refresh asked for while one of the same index
// waits or runs is that job.
func (RAGRefreshArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueRAG,
		MaxAttempts: 5,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateScheduled, rivertype.JobStateRetryable,
		}},
	}
}

// RAGRefresher does the refresh job's work (app/rag's Service).
type RAGRefresher interface {
	RefreshJob(ctx context.Context, tenant, namespace, index string) error
}

// RAGJob is an enqueued refresh.
type RAGJob struct {
	// ID is River's job id.
	ID int64
	// Duplicate is set when a refresh of the index was already queued or
	// running: ID is that job.
	Duplicate bool
	// State is the job's River state (available, running, ...).
	State string
}

// RAG schedules and works the RAG refresh jobs. Build it with NewRAG,
// register its worker in the Queue's Config (and QueueRAG in its Queues),
// then Bind the refresher and SetQueue once both exist.
type RAG struct {
	refresher atomic.Pointer[RAGRefresher]
	queue     atomic.Pointer[Queue]
}

// NewRAG returns the RAG jobs and registers their worker in workers.
func NewRAG(workers *river.Workers) *RAG {
	r := &RAG{}
	river.AddWorker(workers, &ragWorker{r: r})
	return r
}

// Bind sets the refresher the worker calls.
func (r *RAG) Bind(f RAGRefresher) { r.refresher.Store(&f) }

// SetQueue sets the queue jobs are inserted into.
func (r *RAG) SetQueue(q *Queue) { r.queue.Store(q) }

// EnqueueRAGRefresh schedules the refresh of an index and returns its job.
func (r *RAG) EnqueueRAGRefresh(ctx context.Context, tenant, namespace, index string) (RAGJob, error) {
	q := r.queue.Load()
	if q == nil {
		return RAGJob{}, errors.New("jobs: no queue set")
	}
	res, err := q.client.Insert(ctx, RAGRefreshArgs{Tenant: tenant, Namespace: namespace, Index: index}, nil)
	if err != nil {
		return RAGJob{}, err
	}
	return RAGJob{ID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate, State: string(res.Job.State)}, nil
}

var errNoRAGRefresher = errors.New("jobs: RAG refresher not bound yet")

type ragWorker struct {
	river.WorkerDefaults[RAGRefreshArgs]
	r *RAG
}

// Work refreshes the index.
func (w *ragWorker) Work(ctx context.Context, job *river.Job[RAGRefreshArgs]) error {
	f := w.r.refresher.Load()
	if f == nil {
		return errNoRAGRefresher
	}
	return (*f).RefreshJob(ctx, job.Args.Tenant, job.Args.Namespace, job.Args.Index)
}
