package jobs

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// QueueCluster is the queue of the once-per-cluster jobs that every
// replica can work, with or without a tool gateway.
const QueueCluster = "warden_cluster"

// Tasks of the once-per-cluster job.
const (
	// TaskRotateSigningKeys rotates the workload signing key when due.
	TaskRotateSigningKeys = "rotate-signing-keys"
	// TaskRetain compacts the change logs, sweeps the gateway's
	// idempotency claims and usage counters and applies each tenant's
	// retention (server.RetainTenants).
	TaskRetain = "retain"
	// TaskSweepApprovals resumes approved calls that never started,
	// expires overdue approvals and ends interrupted calls, whichever
	// replica left them. It runs on the default queue, which only replicas
	// with a tool gateway work.
	TaskSweepApprovals = "sweep-approvals"
	// TaskDiscoverMCP discovers every MCPServer of every tenant again, so
	// that a server whose tool definitions drift from its pin is
	// quarantined without anyone asking. It runs on QueueMCP, which only
	// replicas with an MCP gateway work: a tool gateway alone would take
	// the job and do nothing.
	TaskDiscoverMCP = "discover-mcp"
)

// QueueMCP is the queue of the discover-mcp job, worked by replicas with
// an MCP gateway.
const QueueMCP = "warden_mcp"

// Defaults of ClusterConfig.
const (
	DefaultRotateEvery         = 10 * time.Minute
	DefaultRetainEvery         = 10 * time.Second
	DefaultSweepApprovalsEvery = time.Minute
	DefaultDiscoverMCPEvery    = 10 * time.Minute
)

// ClusterArgs is the once-per-cluster job: one run of one task.
type ClusterArgs struct {
	Task string `json:"task"`
}

// Kind names the job.
func (ClusterArgs) Kind() string { return "warden.cluster" }

// ClusterRunner does the once-per-cluster work (the server). Each method
// must be safe to run on two replicas at once, which happens when River's
// leadership changes hands or a run outlasts its period.
type ClusterRunner interface {
	RotateSigningKeys(ctx context.Context) error
	Retain(ctx context.Context) error
	SweepApprovals(ctx context.Context) error
	DiscoverMCP(ctx context.Context) error
}

// ClusterConfig sets how often each task runs. Zero means the default;
// River wants periods of a second at least.
type ClusterConfig struct {
	RotateEvery         time.Duration
	RetainEvery         time.Duration
	SweepApprovalsEvery time.Duration
	DiscoverMCPEvery    time.Duration
}

// Cluster runs Warden's background work once per cluster: as River
// periodic jobs, which only River's elected leader inserts, once per
// period, and any replica then works. Build it with NewCluster, put its
// PeriodicJobs and Queues in the Queue's Config, and Bind the runner.
type Cluster struct {
	cfg    ClusterConfig
	runner atomic.Pointer[ClusterRunner]
	// busy holds the tasks running in this process: a task whose last run
	// here has not ended skips its next one rather than pile up.
	busy sync.Map
}

// NewCluster returns the once-per-cluster jobs and registers their worker
// in workers.
func NewCluster(workers *river.Workers, cfg ClusterConfig) *Cluster {
	if cfg.RotateEvery <= 0 {
		cfg.RotateEvery = DefaultRotateEvery
	}
	if cfg.RetainEvery <= 0 {
		cfg.RetainEvery = DefaultRetainEvery
	}
	if cfg.SweepApprovalsEvery <= 0 {
		cfg.SweepApprovalsEvery = DefaultSweepApprovalsEvery
	}
	if cfg.DiscoverMCPEvery <= 0 {
		cfg.DiscoverMCPEvery = DefaultDiscoverMCPEvery
	}
	c := &Cluster{cfg: cfg}
	river.AddWorker(workers, &clusterWorker{c: c})
	return c
}

// Bind sets the runner the jobs call. Jobs that run before are skipped.
func (c *Cluster) Bind(r ClusterRunner) { c.runner.Store(&r) }

// PeriodicJobs are the jobs for Config.PeriodicJobs.
func (c *Cluster) PeriodicJobs() []*river.PeriodicJob {
	job := func(task, queue string, every time.Duration) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
			// One run a period, whatever the leader: a new leader's first
			// insert (RunOnStart) within a period its predecessor already
			// covered is dropped. A failed run waits for the next period.
			return ClusterArgs{Task: task}, &river.InsertOpts{Queue: queue, MaxAttempts: 1,
				UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: every}}
		}, &river.PeriodicJobOpts{ID: task, RunOnStart: true})
	}
	return []*river.PeriodicJob{
		job(TaskRotateSigningKeys, QueueCluster, c.cfg.RotateEvery),
		job(TaskRetain, QueueCluster, c.cfg.RetainEvery),
		job(TaskSweepApprovals, river.QueueDefault, c.cfg.SweepApprovalsEvery),
		job(TaskDiscoverMCP, QueueMCP, c.cfg.DiscoverMCPEvery),
	}
}

// Queues are the queues for Config.Queues: the cluster queue, the default
// queue of the approval jobs when this replica runs a tool gateway, and
// QueueMCP when it runs an MCP gateway.
func (c *Cluster) Queues(gateway, mcp bool) map[string]river.QueueConfig {
	q := map[string]river.QueueConfig{
		// The cluster's jobs come a few times a minute, announced by an
		// insert notification; a slow poll is enough and costs less.
		QueueCluster: {MaxWorkers: 3, FetchPollInterval: time.Second},
	}
	if gateway {
		q[river.QueueDefault] = river.QueueConfig{MaxWorkers: DefaultMaxWorkers}
	}
	if mcp {
		q[QueueMCP] = river.QueueConfig{MaxWorkers: 1, FetchPollInterval: time.Second}
	}
	return q
}

type clusterWorker struct {
	river.WorkerDefaults[ClusterArgs]
	c *Cluster
}

// Work runs the job's task, unless this process is still running its
// previous run or has no runner yet.
func (w *clusterWorker) Work(ctx context.Context, job *river.Job[ClusterArgs]) error {
	r := w.c.runner.Load()
	if r == nil {
		return nil
	}
	if job.Args.Task == TaskDiscoverMCP && time.Since(job.CreatedAt) > w.c.cfg.DiscoverMCPEvery {
		// Left while no replica ran an MCP gateway: a newer run follows.
		return nil
	}
	v, _ := w.c.busy.LoadOrStore(job.Args.Task, new(atomic.Bool))
	busy := v.(*atomic.Bool)
	if !busy.CompareAndSwap(false, true) {
		return nil
	}
	defer busy.Store(false)
	switch job.Args.Task {
	case TaskRotateSigningKeys:
		return (*r).RotateSigningKeys(ctx)
	case TaskRetain:
		return (*r).Retain(ctx)
	case TaskSweepApprovals:
		return (*r).SweepApprovals(ctx)
	case TaskDiscoverMCP:
		return (*r).DiscoverMCP(ctx)
	}
	return river.JobCancel(fmt.Errorf("jobs: unknown cluster task %q", job.Args.Task))
}

// Timeout gives compaction of a long change log room; the other tasks are
// a few queries, or hand their work on (a resumed call runs on its own).
func (w *clusterWorker) Timeout(job *river.Job[ClusterArgs]) time.Duration {
	if job.Args.Task == TaskRetain || job.Args.Task == TaskDiscoverMCP {
		return 10 * time.Minute
	}
	return time.Minute
}
