// Package jobs is Warden's durable job queue: River (github.com/riverqueue/river)
// on the store's database, behind one non-generic Queue type so that callers
// need not care whether River runs on pgx (Postgres) or on database/sql with
// SQLite. It defines Warden's jobs and leaves their work to the packages
// that own it: the approval jobs (approvals.go: resuming an approved tool
// call, expiring an approval) call the tool gateway (app/gateway), and the
// once-per-cluster jobs (cluster.go: signing-key rotation, retention, the
// approval sweep) call the server (app/server). Their workers are
// registered in Config.Workers and bound to their runners once those
// exist.
//
// # What runs where
//
// OpenPostgres migrates River's tables (river_job, river_leader, river_queue,
// ...) with rivermigrate as the owner role, the same role that migrates the
// store, holding an advisory lock so that replicas starting together do not
// race. It then grants the role of the application pool (warden_app):
//
//	GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE river_job, river_leader, river_queue
//	GRANT USAGE ON SEQUENCE river_job_id_seq
//	GRANT USAGE ON TYPE river_job_state
//	GRANT EXECUTE ON FUNCTION river_job_state_in_bitmask(bit, river_job_state)
//
// and builds the River client on that pool, so jobs are inserted, fetched
// and worked by the least-privileged role, which owns none of River's
// tables. It gets nothing on river_migration (the client never reads it) or
// river_notification (used only by River's SQLite driver). River's nightly
// REINDEX needs ownership and is switched off; reindex as the owner if the
// job table ever bloats. River's tables have no row-level security: they
// are not tenant data, and a worker that touches tenant data does so
// through the store, which sets the tenant.
//
// OpenSQLite opens a second handle on the store's database file, with the
// store's pragmas, a single connection and BEGIN IMMEDIATE transactions,
// and migrates River's SQLite schema into the same file. The store's writer
// connection and River's connection are then two writers on one file;
// SQLite serializes them and the one that finds the file locked waits up to
// busy_timeout (10 s). Taking the write lock at BEGIN is what makes the
// wait work: a deferred transaction that read before another connection
// committed and then tries to write gets SQLITE_BUSY at once, because no
// amount of waiting would make its snapshot current. The tests run River
// inserts, River's own work and store writes on one file concurrently under
// the race detector, as well as two Queues on one file (two processes would
// behave alike, each waiting for the other's write lock); but SQLite is the
// single-server mode, so expect one. The price of two connections is that
// a store write sometimes waits for a River transaction, the tail coming
// from SQLite's busy handler, which sleeps rather than queueing
// (docs/performance.md, *Job queue*, has the figures). Sharing the store's
// writer connection would remove that, but needs the store to expose it.
//
// # Adding a worker
//
//	type ExpireArgs struct {
//		ApprovalID string `json:"approvalId"`
//	}
//
//	func (ExpireArgs) Kind() string { return "approval_expire" }
//
//	type ExpireWorker struct {
//		river.WorkerDefaults[ExpireArgs]
//		// dependencies, e.g. the store
//	}
//
//	func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error { ... }
//
//	workers := river.NewWorkers()
//	river.AddWorker(workers, &ExpireWorker{...})
//	q, err := jobs.OpenPostgres(ctx, ownerURL, pgStore.Pool(), jobs.Config{Workers: workers, Logger: log})
//	...
//	err = q.Start(ctx)
//	defer q.Stop(ctx)
//	inserted, err := q.Insert(ctx, ExpireArgs{ApprovalID: id}, &river.InsertOpts{
//		ScheduledAt: deadline,
//		UniqueOpts:  river.UniqueOpts{ByArgs: true},
//	})
//
// Insert takes River's own InsertOpts: ScheduledAt runs a job later,
// UniqueOpts deduplicates (Insert then reports inserted=false for a
// duplicate), MaxAttempts and Queue override the defaults. Every replica
// must register every kind it may fetch: a job whose kind has no worker on
// the replica that fetched it fails and is retried later.
//
// # Durability and single execution
//
// A job is a row, committed before Insert returns, so it survives restarts
// of any replica; whichever Queue next works its queue runs it. Fetching
// moves a job from available to running in one write, under FOR UPDATE
// SKIP LOCKED on Postgres and under the database's single write lock on
// SQLite, so two replicas never fetch the same job; completion is then
// recorded in the row. This is "once" in the normal course but at least
// once in general: a worker that returns an error is retried, up to
// MaxAttempts (River's default 25) with backoff; a process that dies during
// a job leaves it running until River's leader rescues it (once both the
// job's timeout and Config.RescueStuckJobsAfter have passed: one minute by
// default instead of River's hour, so the approval jobs, which time out
// after 30 s, are rescued within about two minutes) and runs it again; and
// a crash between a worker's
// side effect and the recording of its completion repeats the side effect.
// A worker whose effect must happen at most once, such as executing an
// approved tool call, therefore records that it ran, in the store and
// transactionally with the effect where possible, checks that record
// first, and inserts its jobs with MaxAttempts 1 when a retry would be
// wrong.
//
// Scheduled jobs (InsertOpts.ScheduledAt) are made available by the leader,
// one client elected among those sharing the database, which looks 5 s
// ahead every 5 s (River's fixed scheduler interval); the job then runs at
// its time plus up to FetchPollInterval. A job scheduled less than 5 s
// ahead may therefore run up to 5 s late, and while leadership changes
// hands scheduled jobs wait: a leader that dies without resigning, or a
// client stopped while its election query is in flight, holds leadership
// until it expires after 15 s. Periodic jobs are also inserted by the leader only,
// so each runs once per period however many replicas run: Cluster uses
// them for the work that must run once per cluster, and makes each unique
// by period besides, so that a change of leader does not double a run.
//
// # Polling defaults
//
// River learns of inserts through LISTEN/NOTIFY on Postgres and through a
// river_notification table it polls every 50 ms on SQLite. It notifies at
// most once per FetchCooldown per queue and otherwise fetches every
// FetchPollInterval, so FetchPollInterval bounds the latency of a job
// inserted just after another, of a scheduled job, and of a lost
// notification. River's defaults (a 100 ms cooldown, a 1 s poll) left a
// job inserted right after the previous one waiting most of a second; the
// defaults here, DefaultFetchCooldown and DefaultFetchPollInterval, trade
// one idle fetch per queue and replica every poll interval (a cheap
// indexed query on Postgres, a short write transaction on SQLite) for
// latency. The queue of the once-per-cluster jobs (QueueCluster) polls
// once a second, its jobs being few and announced by insert
// notifications. docs/performance.md (*Job queue*) has the measurements;
// tests may set the interval lower.
package jobs
