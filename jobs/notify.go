package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/warden-dev/warden/app/store"
)

// NotifyArgs is one notification of an approval: one channel, one
// recipient (an e-mail address; empty for webhooks and chat).
type NotifyArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Approval  string `json:"approval"`
	Channel   string `json:"channel"`
	Recipient string `json:"recipient,omitempty"`
}

// Kind is the River job kind.
func (NotifyArgs) Kind() string { return "warden.approval.notify" }

// DefaultNotifyAttempts bounds a notification's delivery attempts when its
// channel names no maxAttempts.
const DefaultNotifyAttempts = 8

// Notifier delivers notifications; notifications.Service implements it.
type Notifier interface {
	// Deliver makes attempt (from 1) to deliver one notification and
	// records it; final says no attempt follows a failure. An error makes
	// the job retry with backoff.
	Deliver(ctx context.Context, args NotifyArgs, attempt int, final bool) error
}

// Notifications enqueues notifications and runs their jobs. Like
// Approvals, its notifier is bound once the service exists.
type Notifications struct {
	notifier atomic.Pointer[Notifier]
	queue    atomic.Pointer[Queue]
}

// NewNotifications registers the notification worker on workers.
func NewNotifications(workers *river.Workers) *Notifications {
	n := &Notifications{}
	river.AddWorker(workers, &notifyWorker{n: n})
	return n
}

// Bind sets the notifier jobs deliver through.
func (n *Notifications) Bind(d Notifier) { n.notifier.Store(&d) }

// SetQueue sets the queue notifications are inserted into.
func (n *Notifications) SetQueue(q *Queue) { n.queue.Store(q) }

// EnqueueTx inserts a notification job in the store transaction tx: it
// runs only if tx commits, and the approval it announces never exists
// without it.
func (n *Notifications) EnqueueTx(ctx context.Context, tx store.Tx, args NotifyArgs, maxAttempts int) error {
	q := n.queue.Load()
	if q == nil {
		return errors.New("jobs: no queue set for notifications")
	}
	if maxAttempts <= 0 {
		maxAttempts = DefaultNotifyAttempts
	}
	_, err := q.InsertStoreTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// InsertStoreTx inserts a job in the store transaction tx (River's InsertTx on
// the driver's own transaction), so that the job commits or rolls back
// with the store's writes. The queue must run on the store's database.
func (q *Queue) InsertStoreTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (inserted bool, err error) {
	dt, ok := tx.(store.DriverTx)
	if !ok {
		return false, fmt.Errorf("jobs: insert %s: the store's transaction %T is not a SQL transaction", args.Kind(), tx)
	}
	raw := dt.DriverTx()
	var skipped bool
	switch c := q.client.(type) {
	case *river.Client[*sql.Tx]:
		sqlTx, ok := raw.(*sql.Tx)
		if !ok {
			return false, fmt.Errorf("jobs: insert %s: the store's transaction is %T, the queue's SQLite", args.Kind(), raw)
		}
		res, err := c.InsertTx(ctx, sqlTx, args, opts)
		if err != nil {
			return false, fmt.Errorf("jobs: insert %s: %w", args.Kind(), err)
		}
		skipped = res.UniqueSkippedAsDuplicate
	case *river.Client[pgx.Tx]:
		pgTx, ok := raw.(pgx.Tx)
		if !ok {
			return false, fmt.Errorf("jobs: insert %s: the store's transaction is %T, the queue's Postgres", args.Kind(), raw)
		}
		res, err := c.InsertTx(ctx, pgTx, args, opts)
		if err != nil {
			return false, fmt.Errorf("jobs: insert %s: %w", args.Kind(), err)
		}
		skipped = res.UniqueSkippedAsDuplicate
	default:
		return false, fmt.Errorf("jobs: insert %s: queue client %T cannot insert in a transaction", args.Kind(), q.client)
	}
	return !skipped, nil
}

// notifyBackoff is the wait before attempt+1: 2, 4, 8 … seconds, at most
// ten minutes, so a bounded number of attempts spans about an hour.
func notifyBackoff(attempt int) time.Duration {
	if attempt > 9 {
		return 10 * time.Minute
	}
	return min(time.Second<<attempt, 10*time.Minute)
}

type notifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	n *Notifications
}

func (w *notifyWorker) Work(ctx context.Context, job *river.Job[NotifyArgs]) error {
	d := w.n.notifier.Load()
	if d == nil {
		return errors.New("jobs: notifier not bound yet")
	}
	return (*d).Deliver(ctx, job.Args, job.Attempt, job.Attempt >= job.MaxAttempts)
}

func (w *notifyWorker) NextRetry(job *river.Job[NotifyArgs]) time.Time {
	return time.Now().Add(notifyBackoff(job.Attempt))
}

func (w *notifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration { return time.Minute }
