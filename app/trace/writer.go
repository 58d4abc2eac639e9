package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// ErrBusy means the write queue is full: the caller should retry later
// (429 or RESOURCE_EXHAUSTED with retry information).
var ErrBusy = errors.New("the trace store's write queue is full")

// ErrStopped means the writer has stopped.
var ErrStopped = errors.New("the trace writer has stopped")

// job is one submitted batch.
type job struct {
	tenant string
	batch  *store.SpanBatch
	n      int
	// done receives the outcome; nil for fire-and-forget submissions.
	done chan error
}

// size is what a job counts against the queue's capacity: its spans and
// events, at least one.
func size(b *store.SpanBatch) int { return max(1, spanCount(b)+len(b.Events)) }

// spanCount is the number of spans of b, encoded in blocks or not.
func spanCount(b *store.SpanBatch) int {
	n := len(b.Spans)
	for i := range b.Blocks {
		n += b.Blocks[i].Spans
	}
	return n
}

// Writer queues batches in memory, bounded by a number of spans, and
// writes them in transactions of up to MaxBatch spans per tenant: many small
// exports become few large transactions, the cost that decides ingest
// throughput. A full queue refuses new batches (ErrBusy) instead of
// growing.
//
// Rollups are not written with their spans: a batch of 512 spans names a
// few hundred (agent, tool) pairs, and an upsert per pair and bucket cost
// more than the spans. They are added up in memory per tenant and written
// every rollupEvery, before a metrics query of the tenant (FlushRollups),
// and on Close. A crash loses at most the last rollupEvery of aggregates;
// acknowledged spans are never lost.
type Writer struct {
	st       store.TraceStore
	log      *slog.Logger
	capacity int
	maxBatch int
	metrics  *Metrics

	// rollMu guards rollups, the aggregates not yet written, per tenant.
	rollMu    sync.Mutex
	rollups   map[string]*rollupSet
	lastFlush time.Time

	mu      sync.Mutex
	queued  int
	pending []*job
	closed  bool
	wake    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewWriter starts workers writers over st.
func NewWriter(st store.TraceStore, capacity, maxBatch, workers int, m *Metrics, log *slog.Logger) *Writer {
	w := &Writer{st: st, log: log, capacity: capacity, maxBatch: maxBatch, metrics: m, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		rollups: map[string]*rollupSet{}, lastFlush: time.Now()}
	m.queueCapacity.Store(int64(capacity))
	for range workers {
		w.wg.Add(1)
		go w.loop()
	}
	return w
}

// Submit queues b for tenant and, with wait, waits until it is stored (or
// ctx ends). ErrBusy when the queue cannot take it now.
func (w *Writer) Submit(ctx context.Context, tenant string, b *store.SpanBatch, wait bool) error {
	j := &job{tenant: tenant, batch: b, n: size(b)}
	if wait {
		j.done = make(chan error, 1)
	}
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		return ErrStopped
	case w.queued > 0 && w.queued+j.n > w.capacity:
		// An empty queue takes any batch, so one larger than the
		// capacity is not refused for ever.
		w.mu.Unlock()
		w.metrics.refused.Add(int64(spanCount(b)))
		return ErrBusy
	}
	w.queued += j.n
	w.pending = append(w.pending, j)
	w.metrics.queued.Store(int64(w.queued))
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if !wait {
		return nil
	}
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		// The batch stays queued and is written; the caller stops waiting.
		return ctx.Err()
	}
}

// take removes up to maxBatch spans' worth of jobs of one tenant (the
// oldest job's) from the queue; nil when the queue is empty.
func (w *Writer) take() []*job {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	tenant := w.pending[0].tenant
	var out []*job
	n := 0
	rest := w.pending[:0]
	for _, j := range w.pending {
		if j.tenant == tenant && (len(out) == 0 || n+j.n <= w.maxBatch) {
			out = append(out, j)
			n += j.n
			continue
		}
		rest = append(rest, j)
	}
	clear(w.pending[len(rest):])
	w.pending = rest
	return out
}

func (w *Writer) release(jobs []*job) {
	n := 0
	for _, j := range jobs {
		n += j.n
	}
	w.mu.Lock()
	w.queued -= n
	w.metrics.queued.Store(int64(w.queued))
	w.mu.Unlock()
}

// rollupEvery is how often added-up rollups are written.
const rollupEvery = time.Second

func (w *Writer) loop() {
	defer w.wg.Done()
	tick := time.NewTicker(rollupEvery)
	defer tick.Stop()
	for {
		w.flushIfDue()
		jobs := w.take()
		if jobs == nil {
			w.mu.Lock()
			closed := w.closed && len(w.pending) == 0
			w.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-w.wake:
			case <-w.stop:
			case <-tick.C:
			}
			continue
		}
		// More may be waiting for another worker.
		select {
		case w.wake <- struct{}{}:
		default:
		}
		w.write(jobs)
		w.release(jobs)
	}
}

// write stores jobs in one transaction; when that fails, each alone, so
// one bad batch fails only its own sender. The rollups of the batches
// stored are added up for the next flush.
func (w *Writer) write(jobs []*job) {
	tenant := jobs[0].tenant
	rollups := make([][]store.SpanRollup, len(jobs))
	for i, j := range jobs {
		rollups[i], j.batch.Rollups = j.batch.Rollups, nil
	}
	stored := func(i int) {
		w.rollMu.Lock()
		set := w.rollups[tenant]
		if set == nil {
			set = newRollupSet()
			w.rollups[tenant] = set
		}
		set.merge(rollups[i])
		w.rollMu.Unlock()
	}
	if len(jobs) == 1 {
		err := w.store(tenant, jobs[0].batch)
		if err == nil {
			stored(0)
		}
		w.finish(jobs[0], err)
		return
	}
	merged := &store.SpanBatch{}
	seen := map[int64]bool{}
	for _, j := range jobs {
		merged.Spans = append(merged.Spans, j.batch.Spans...)
		merged.Blocks = append(merged.Blocks, j.batch.Blocks...)
		merged.Events = append(merged.Events, j.batch.Events...)
		for _, r := range j.batch.Resources {
			if !seen[r.ID] {
				seen[r.ID] = true
				merged.Resources = append(merged.Resources, r)
			}
		}
	}
	if err := w.store(tenant, merged); err == nil {
		for i, j := range jobs {
			stored(i)
			w.finish(j, nil)
		}
		return
	}
	for i, j := range jobs {
		err := w.store(tenant, j.batch)
		if err == nil {
			stored(i)
		}
		w.finish(j, err)
	}
}

// flushIfDue writes the added-up rollups when rollupEvery has passed.
func (w *Writer) flushIfDue() {
	w.rollMu.Lock()
	due := time.Since(w.lastFlush) >= rollupEvery && len(w.rollups) > 0
	w.rollMu.Unlock()
	if due {
		w.FlushRollups(context.Background(), "")
	}
}

// FlushRollups writes the added-up rollups of tenant ("" for every tenant)
// now. A tenant's rollups that fail to be written are kept for the next
// flush.
func (w *Writer) FlushRollups(ctx context.Context, tenant string) {
	w.rollMu.Lock()
	take := map[string]*rollupSet{}
	for t, set := range w.rollups {
		if tenant == "" || t == tenant {
			take[t] = set
			delete(w.rollups, t)
		}
	}
	if tenant == "" {
		w.lastFlush = time.Now()
	}
	w.rollMu.Unlock()
	for t, set := range take {
		err := w.st.SpanWrite(ctx, t, &store.SpanBatch{Rollups: set.list()})
		if err == nil {
			continue
		}
		w.log.Error("store call rollups", "tenant", t, "err", err)
		w.rollMu.Lock()
		if cur := w.rollups[t]; cur != nil {
			set.merge(cur.list())
		}
		w.rollups[t] = set
		w.rollMu.Unlock()
	}
}

func (w *Writer) store(tenant string, b *store.SpanBatch) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.st.SpanWrite(ctx, tenant, b)
	w.metrics.observeWrite(time.Since(start), spanCount(b), len(b.Events), err)
	if err != nil {
		w.log.Error("store spans", "tenant", tenant, "spans", spanCount(b), "err", err)
		return fmt.Errorf("store spans: %w", err)
	}
	return nil
}

func (w *Writer) finish(j *job, err error) {
	if j.done != nil {
		j.done <- err
	}
}

// Close stops taking batches, writes those queued and returns when done.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
	w.FlushRollups(context.Background(), "")
}
