package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// hardStopTimeout bounds how long Stop waits for cancelled jobs to return
// once its context is done.
const hardStopTimeout = 10 * time.Second

// client is what Queue uses of a River client. *river.Client[pgx.Tx] and
// *river.Client[*sql.Tx] both implement it: none of these methods mention
// the transaction type.
type client interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func())
}

// Queue is a River client on either backend. Its methods are safe for
// concurrent use.
type Queue struct {
	client client
	// pgx is client on Postgres, for InsertTx; nil on SQLite.
	pgx *river.Client[pgx.Tx]
	// close releases what the Open function opened (the SQLite handle);
	// nil when there is nothing to release.
	close     func() error
	closeOnce sync.Once
	closeErr  error
}

// Insert enqueues args. opts may be nil; set opts.ScheduledAt to run the
// job later and opts.UniqueOpts (for example ByArgs) to deduplicate. It
// reports inserted=false, with no error, when UniqueOpts matched a job that
// already existed and no new job was inserted.
func (q *Queue) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (inserted bool, err error) {
	res, err := q.client.Insert(ctx, args, opts)
	if err != nil {
		return false, fmt.Errorf("jobs: insert %s: %w", args.Kind(), err)
	}
	return !res.UniqueSkippedAsDuplicate, nil
}

// InsertTx enqueues args in tx, a transaction of the pool the Queue was
// opened on, so that the job commits or rolls back with the caller's
// writes. It reports ok=false, doing nothing, on a Queue that cannot: one
// on SQLite, whose store and queue use two connections.
func (q *Queue) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (ok bool, err error) {
	if q.pgx == nil || tx == nil {
		return false, nil
	}
	if _, err := q.pgx.InsertTx(ctx, tx, args, opts); err != nil {
		return false, fmt.Errorf("jobs: insert %s in a transaction: %w", args.Kind(), err)
	}
	return true, nil
}

// Start starts fetching and working jobs in the background. Cancelling ctx
// stops the Queue as Stop would, but without closing its database handle;
// call Stop anyway.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones to finish. When
// ctx is done first it cancels the jobs still running and waits up to ten
// seconds more for them to return. It then closes the database handle the
// Queue opened (never a pool passed to OpenPostgres). Stop on a Queue that
// was never started only closes; calling it twice is harmless.
func (q *Queue) Stop(ctx context.Context) error {
	err := q.client.Stop(ctx)
	if err != nil {
		hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopTimeout)
		defer cancel()
		if hardErr := q.client.StopAndCancel(hardCtx); hardErr != nil {
			err = errors.Join(err, fmt.Errorf("cancel running jobs: %w", hardErr))
		}
		err = fmt.Errorf("jobs: stop: %w", err)
	}
	q.closeOnce.Do(func() {
		if q.close != nil {
			q.closeErr = q.close()
		}
	})
	if q.closeErr != nil {
		return errors.Join(err, fmt.Errorf("jobs: close: %w", q.closeErr))
	}
	return err
}

// Subscribe returns a channel of this Queue's events of the given kinds
// (for example river.EventKindJobCompleted) and a function that ends the
// subscription. Events are dropped when the channel's buffer is full, so
// read it promptly; it is meant for tests and metrics, not for logic that
// must see every job.
func (q *Queue) Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func()) {
	return q.client.Subscribe(kinds...)
}
