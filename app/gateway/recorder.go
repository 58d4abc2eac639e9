package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 128

// Group commit under load. A transaction has a fixed cost (begin, the
// tenant's counter row, commit and its write-ahead log) that its writes
// share; when many calls are in flight, a batch taken the moment the
// writer is free holds only the few that happened to be queued, and the
// fixed cost is paid again and again by a processor that is already the
// bottleneck. So when at least groupMin calls are in flight through a
// writer's pipelines (from their start to their last write; not while they
// wait for an approver or for an earlier call they repeat), the writer
// waits until 1/groupShare of them have queued a write, at most groupWait.
// Alone or at a moderate rate fewer calls are in flight and nobody waits;
// calls in flight because their tools are slow wait at most groupWait a
// write, small next to the tool.
const (
	groupMin   = 8
	groupShare = 2
	groupWait  = 3 * time.Millisecond
)

// recorder writes the gateway's records with group commit: every write
// waiting when a writer becomes free goes into that writer's next
// transaction (one per tenant), so under load a thousand calls cost a few
// dozen commits, and alone a call waits for nobody. A caller returns after
// the transaction holding its write committed and is durable.
//
// Each tenant has one writer (tenants are spread over the writers by a
// hash): a tenant's transactions serialize on its lock in the database
// anyway, and a second writer would only split what piles up during a
// commit into two smaller batches, each waiting for the other.
//
// A write is a function over the transaction that must be safe to run
// again: when one write of a batch fails, the transaction rolls back, the
// failing write gets its error, and the others run again without it.
type recorder struct {
	st     store.Store
	shards []chan *write
	// inflight counts, per writer, the calls in flight (group commit).
	inflight []atomic.Int64
	// groupMin, groupShare and groupWait are the constants of the same
	// names (tests change them).
	groupMin, groupShare int
	groupWait            time.Duration
	// stop is closed by close: the writers drain their queues and end.
	stop chan struct{}
	// mu orders enqueue (read) with close (write); closed refuses writes.
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
	// syncs are the batches committed and waiting to be durable.
	syncs sync.WaitGroup
}

// write is fn (a general write) or cw (a tool-call write, which the store
// batches in fewer round trips).
type write struct {
	ctx    context.Context
	tenant string
	fn     func(ctx context.Context, tx store.Tx) error
	cw     *store.CallWrite
	// committed is true when the caller needs the write committed
	// (visible to every replica) but not yet durable: a later durable
	// write of the same call covers it (see call).
	committed bool
	done      chan error
}

// itemError marks the write of a batch that failed.
type itemError struct {
	index int
	err   error
}

func (e *itemError) Error() string { return e.err.Error() }

func newRecorder(st store.Store, workers int) *recorder {
	r := &recorder{st: st, stop: make(chan struct{}), inflight: make([]atomic.Int64, workers),
		groupMin: groupMin, groupShare: groupShare, groupWait: groupWait}
	for i := range workers {
		ch := make(chan *write, 4096)
		r.shards = append(r.shards, ch)
		r.wg.Add(1)
		go r.run(ch, &r.inflight[i])
	}
	return r
}

// mark is a call's place in its writer's count of calls in flight. A call
// and its mark belong to one goroutine.
type mark struct {
	n  *atomic.Int64
	on bool
}

// mark returns the mark of a call of tenant, set.
func (r *recorder) mark(tenant string) mark {
	m := mark{n: &r.inflight[shard(tenant, len(r.shards))]}
	m.set(true)
	return m
}

// set counts the call as in flight, or not. The zero mark (a call the
// recorder does not count) changes nothing.
func (m *mark) set(on bool) {
	if m.n == nil || m.on == on {
		return
	}
	if on {
		m.n.Add(1)
	} else {
		m.n.Add(-1)
	}
	m.on = on
}

// do runs fn in a transaction of tenant, possibly shared with other writes,
// and returns when it committed or failed. The write is not abandoned when
// ctx ends: a record must not be half written because a client went away.
func (r *recorder) do(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	return r.enqueue(&write{ctx: context.WithoutCancel(ctx), tenant: tenant, fn: fn, done: make(chan error, 1)})
}

// call applies cw (store.CallWriter), possibly in one batch with other
// callers' writes, and returns when the batch is durable or failed; cw
// then holds its outcome.
//
// With committed set it returns once the batch committed, before it is
// durable: for the record of a read-only call that the gateway itself
// runs. Its tool has no side effect to protect, and nobody outside the
// gateway hears of the call before its result, a later write of the same
// tenant, is durable, which makes every earlier commit durable too (the
// store's log is written in commit order). A crash of the database in
// between loses both, and nobody was answered.
func (r *recorder) call(ctx context.Context, tenant string, cw *store.CallWrite, committed bool) error {
	return r.enqueue(&write{ctx: context.WithoutCancel(ctx), tenant: tenant, cw: cw, committed: committed, done: make(chan error, 1)})
}

// enqueue hands w to its writer and waits for the outcome. The read lock
// orders it with close: a write is either queued before the writers are
// told to stop (and they drain it) or refused.
func (r *recorder) enqueue(w *write) error {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return errors.New("gateway: shutting down")
	}
	// Never blocks for long: the writers run until close, which waits
	// for this lock.
	r.shards[shard(w.tenant, len(r.shards))] <- w
	r.mu.RUnlock()
	return <-w.done
}

// close refuses new writes, lets the writers commit what is queued, and
// waits for them and for the flushes still pending.
func (r *recorder) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	r.mu.Unlock()
	r.wg.Wait()
	r.syncs.Wait()
}

// shard returns the writer of tenant (FNV-1a).
func shard(tenant string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(tenant); i++ {
		h = (h ^ uint32(tenant[i])) * 16777619
	}
	return int(h % uint32(n))
}

func (r *recorder) run(ch chan *write, inflight *atomic.Int64) {
	defer r.wg.Done()
	for {
		var first *write
		select {
		case first = <-ch:
		case <-r.stop:
			// Drain what was queued before the shutdown.
			for {
				select {
				case w := <-ch:
					r.commitAll([]*write{w}, true)
				default:
					return
				}
			}
		}
		batch := []*write{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case w := <-ch:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		if n := int(inflight.Load()); n >= r.groupMin && len(batch) < n/r.groupShare {
			batch = r.gather(ch, batch, min(n/r.groupShare, maxBatch))
		}
		// Nothing else waiting: no batch would run during this one's WAL
		// flush, so its commit may as well wait for it.
		r.commitAll(batch, len(ch) == 0)
	}
}

// gather adds writes from ch to batch until it holds want, groupWait
// passed or the recorder stops.
func (r *recorder) gather(ch chan *write, batch []*write, want int) []*write {
	t := time.NewTimer(r.groupWait)
	defer t.Stop()
	for len(batch) < want {
		select {
		case w := <-ch:
			batch = append(batch, w)
		case <-t.C:
			return batch
		case <-r.stop:
			return batch
		}
	}
	return batch
}

// commitAll commits a batch: per tenant, in arrival order, one
// transaction for the tool-call writes and one for the general writes.
func (r *recorder) commitAll(batch []*write, durable bool) {
	for len(batch) > 0 {
		tenant := batch[0].tenant
		var calls, general, rest []*write
		for _, w := range batch {
			switch {
			case w.tenant != tenant:
				rest = append(rest, w)
			case w.cw != nil:
				calls = append(calls, w)
			default:
				general = append(general, w)
			}
		}
		r.commitCalls(calls, durable)
		r.commit(general)
		batch = rest
	}
}

// commitCalls writes ws with one WriteCalls, retrying without a write that
// fails. A batch of committed-only writes never waits for durability.
func (r *recorder) commitCalls(ws []*write, durable bool) {
	durable = durable && slices.ContainsFunc(ws, func(w *write) bool { return !w.committed })
	for len(ws) > 0 {
		cws := make([]*store.CallWrite, len(ws))
		for i, w := range ws {
			cws[i] = w.cw
		}
		err := r.st.WriteCalls(ws[0].ctx, ws[0].tenant, cws, durable)
		var be *store.BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(ws) {
			ws[be.Index].done <- be.Err
			ws = append(ws[:be.Index:be.Index], ws[be.Index+1:]...)
			continue
		}
		if err != nil {
			for _, w := range ws {
				w.done <- err
			}
			return
		}
		if durable {
			for _, w := range ws {
				w.done <- nil
			}
			return
		}
		// Committed: the next batch may start while this one becomes
		// durable, and its callers hear of it only then, but for those
		// who need it committed only.
		var wait []*write
		for _, w := range ws {
			if w.committed {
				w.done <- nil
			} else {
				wait = append(wait, w)
			}
		}
		if len(wait) == 0 {
			return
		}
		r.syncs.Add(1)
		go func() {
			defer r.syncs.Done()
			err := r.st.Sync(wait[0].ctx)
			for _, w := range wait {
				w.done <- err
			}
		}()
		return
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
