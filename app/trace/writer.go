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
func size(b *store.SpanBatch) int { return max(1, len(b.Spans)+len(b.Events)) }

// Writer queues batches in memory, bounded by a number of spans, and
// writes them in transactions of up to MaxBatch spans per tenant: many small
// exports become few large transactions, the cost that decides ingest
// throughput. A full queue refuses new batches (ErrBusy) instead of
// growing.
type Writer struct {
	st       store.TraceStore
	log      *slog.Logger
	capacity int
	maxBatch int
	metrics  *Metrics

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
	w := &Writer{st: st, log: log, capacity: capacity, maxBatch: maxBatch, metrics: m, wake: make(chan struct{}, 1), stop: make(chan struct{})}
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
		w.metrics.refused.Add(int64(len(b.Spans)))
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

func (w *Writer) loop() {
	defer w.wg.Done()
	for {
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
// one bad batch fails only its own sender.
func (w *Writer) write(jobs []*job) {
	tenant := jobs[0].tenant
	if len(jobs) == 1 {
		w.finish(jobs[0], w.store(tenant, jobs[0].batch))
		return
	}
	merged := &store.SpanBatch{}
	rollups := newRollupSet()
	seen := map[int64]bool{}
	for _, j := range jobs {
		merged.Spans = append(merged.Spans, j.batch.Spans...)
		merged.Events = append(merged.Events, j.batch.Events...)
		for _, r := range j.batch.Resources {
			if !seen[r.ID] {
				seen[r.ID] = true
				merged.Resources = append(merged.Resources, r)
			}
		}
		rollups.merge(j.batch.Rollups)
	}
	merged.Rollups = rollups.list()
	if err := w.store(tenant, merged); err == nil {
		for _, j := range jobs {
			w.finish(j, nil)
		}
		return
	}
	for _, j := range jobs {
		w.finish(j, w.store(tenant, j.batch))
	}
}

func (w *Writer) store(tenant string, b *store.SpanBatch) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.st.SpanWrite(ctx, tenant, b)
	w.metrics.observeWrite(time.Since(start), len(b.Spans), len(b.Events), err)
	if err != nil {
		w.log.Error("store spans", "tenant", tenant, "spans", len(b.Spans), "err", err)
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
}
