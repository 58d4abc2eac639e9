package gateway

import (
	"context"
	"errors"
	"sync"

	"github.com/warden-dev/warden/app/store"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 128

// recorder writes the gateway's records with group commit: every write
// waiting when a writer becomes free goes into that writer's next
// transaction (one per tenant), so under load a thousand calls cost a few
// dozen commits, and alone a call waits for nobody. A caller returns after
// the transaction holding its write committed.
//
// A write is a function over the transaction that must be safe to run
// again: when one write of a batch fails, the transaction rolls back, the
// failing write gets its error, and the others run again without it.
type recorder struct {
	st   store.Store
	ch   chan *write
	base context.Context
	wg   sync.WaitGroup
}

type write struct {
	ctx    context.Context
	tenant string
	fn     func(ctx context.Context, tx store.Tx) error
	done   chan error
}

// itemError marks the write of a batch that failed.
type itemError struct {
	index int
	err   error
}

func (e *itemError) Error() string { return e.err.Error() }

func newRecorder(base context.Context, st store.Store, workers int) *recorder {
	r := &recorder{st: st, ch: make(chan *write, 4096), base: base}
	for range workers {
		r.wg.Add(1)
		go r.run()
	}
	return r
}

// do runs fn in a transaction of tenant, possibly shared with other writes,
// and returns when it committed or failed. The write is not abandoned when
// ctx ends: a record must not be half written because a client went away.
func (r *recorder) do(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	w := &write{ctx: context.WithoutCancel(ctx), tenant: tenant, fn: fn, done: make(chan error, 1)}
	select {
	case r.ch <- w:
	case <-r.base.Done():
		return errors.New("gateway: shutting down")
	}
	return <-w.done
}

func (r *recorder) close() { r.wg.Wait() }

func (r *recorder) run() {
	defer r.wg.Done()
	for {
		var first *write
		select {
		case first = <-r.ch:
		case <-r.base.Done():
			// Drain what was queued before the shutdown.
			for {
				select {
				case w := <-r.ch:
					r.commit([]*write{w})
				default:
					return
				}
			}
		}
		batch := []*write{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case w := <-r.ch:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		// One transaction per tenant, in arrival order.
		for len(batch) > 0 {
			tenant := batch[0].tenant
			var same, rest []*write
			for _, w := range batch {
				if w.tenant == tenant {
					same = append(same, w)
				} else {
					rest = append(rest, w)
				}
			}
			r.commit(same)
			batch = rest
		}
	}
}

// commit runs ws in one transaction, retrying without a write that fails.
func (r *recorder) commit(ws []*write) {
	for len(ws) > 0 {
		err := r.st.Update(ws[0].ctx, ws[0].tenant, func(ctx context.Context, tx store.Tx) error {
			for i, w := range ws {
				if err := w.fn(w.ctx, tx); err != nil {
					return &itemError{index: i, err: err}
				}
			}
			return nil
		})
		var ie *itemError
		if errors.As(err, &ie) {
			ws[ie.index].done <- ie.err
			ws = append(ws[:ie.index:ie.index], ws[ie.index+1:]...)
			continue
		}
		for _, w := range ws {
			w.done <- err
		}
		return
	}
}
