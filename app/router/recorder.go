package router

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/yield"
)

// record is what one model call leaves behind: its routing decision, its
// events and its usage charges.
type record struct {
	tenant   string
	decision store.RouteDecision
	events   []events.Event
	charges  []store.UsageCharge
}

// Recording off the request path. A model call answers as soon as the
// provider has; its record goes into a queue that one writer drains every
// flushEvery (or as soon as flushBatch records wait), in one transaction
// per tenant and txRecords records. Under load hundreds of calls share a
// commit, and the request path never waits for the store. What this
// gives up: a process that dies loses the records of at most the last
// flushEvery (the answers were given, the decisions, events and charges
// of those calls are not written); a graceful stop (Close) writes
// everything queued. Reads that must see every decision (explain) call
// flush first, so a caller always reads its own decisions back.
//
// The writer runs on the processors that serve the requests. While it
// keeps up, it steps aside for them between its statements (package
// yield): on one core, a batch written in one go held up every request
// that arrived meanwhile, most of the router's tail latency.
//
// A transaction holds at most txRecords records: its commit writes every
// page it changed in one go, without a chance to step aside for requests,
// and a backlog of tens of thousands (after a burst) committed at once
// held the processor for tens of milliseconds.
const (
	flushEvery = 50 * time.Millisecond
	flushBatch = 512
	queueSize  = 65536
	txRecords  = 256
	// yieldQuantum is the most the writer works between two yields
	// while it keeps up (one statement more at worst): every 16-row
	// statement yielding cost ~40 µs of CPU a call at 500/s in thread
	// hand-offs.
	yieldQuantum = 100 * time.Microsecond
)

type recorder struct {
	st  store.Store
	bus *events.Bus
	log *slog.Logger

	// mu guards the queue. A call appends to it and wakes the writer only
	// when the queue was empty or has reached flushBatch: a channel send
	// per call woke the writer's goroutine (and, with a processor idle,
	// a thread) for every call.
	mu      sync.Mutex
	pending []*record
	// room is signalled when the writer takes the queue, for calls
	// waiting on a full one (queueSize).
	room   *sync.Cond
	closed bool

	// yield lets the writer step aside for requests (write).
	yield *yield.Yielder

	// kick wakes the writer (buffered: one wake-up stands for any number).
	kick chan struct{}
	// flushes asks the writer to write what is queued now and closes the
	// channel it is sent once that is committed.
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newRecorder(st store.Store, bus *events.Bus, log *slog.Logger) *recorder {
	r := &recorder{st: st, bus: bus, log: log, yield: yield.New(yieldQuantum), kick: make(chan struct{}, 1),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	r.room = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// add queues a record. A full queue (the store far behind) blocks the
// caller rather than dropping the record.
func (r *recorder) add(rec *record) {
	r.mu.Lock()
	for len(r.pending) >= queueSize && !r.closed {
		r.room.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		r.log.Warn("model router record after close: dropped", "tenant", rec.tenant, "decision", rec.decision.ID)
		return
	}
	r.pending = append(r.pending, rec)
	n := len(r.pending)
	r.mu.Unlock()
	if n == 1 || n == flushBatch {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// take returns the queue and leaves an empty one (reusing spare, the
// batch the writer has written).
func (r *recorder) take(spare []*record) []*record {
	r.mu.Lock()
	batch := r.pending
	r.pending = spare[:0]
	r.room.Broadcast()
	r.mu.Unlock()
	return batch
}

// queued is the number of records waiting.
func (r *recorder) queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// flush returns once every record queued before it is written.
func (r *recorder) flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case r.flushes <- done:
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close writes what is queued and stops the writer.
func (r *recorder) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.room.Broadcast()
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	_ = r.yield.Close()
}

// run is the writer. Woken by the first record of an empty queue, it
// waits flushEvery for more (or until flushBatch wait) and writes them
// all in one go; an idle router has no timer running.
func (r *recorder) run() {
	defer close(r.done)
	timer := time.NewTimer(flushEvery)
	timer.Stop()
	// wait is the timer's channel while a batch gathers, nil otherwise.
	var wait <-chan time.Time
	var spare []*record
	for {
		var flushed chan struct{}
		select {
		case <-r.kick:
			if wait == nil && r.queued() < flushBatch {
				timer.Reset(flushEvery)
				wait = timer.C
				continue
			}
			// flushBatch records wait.
		case <-wait:
		case flushed = <-r.flushes:
		case <-r.stop:
			timer.Stop()
			r.drain()
			return
		}
		timer.Stop()
		wait = nil
		batch := r.take(spare)
		r.write(batch)
		clear(batch)
		spare = batch
		if flushed != nil {
			close(flushed)
		}
	}
}

// drain writes what is left after close.
func (r *recorder) drain() {
	for {
		batch := r.take(nil)
		if len(batch) == 0 {
			return
		}
		r.write(batch)
	}
}

// write commits a batch, one transaction per tenant and txRecords
// records, and publishes the events it wrote.
func (r *recorder) write(batch []*record) {
	if len(batch) == 0 {
		return
	}
	byTenant := map[string][]*record{}
	var order []string
	for _, rec := range batch {
		if _, ok := byTenant[rec.tenant]; !ok {
			order = append(order, rec.tenant)
		}
		byTenant[rec.tenant] = append(byTenant[rec.tenant], rec)
	}
	// Keeping up, the writer steps aside for requests between its
	// statements; behind (a burst queued more than flushBatch), it does
	// not, or requests would keep it behind until the queue is full.
	ctx := context.Background()
	if len(batch) <= flushBatch {
		ctx = yield.NewContext(ctx, r.yield)
	}
	for _, tenant := range order {
		for recs := range slices.Chunk(byTenant[tenant], txRecords) {
			r.writeTenant(ctx, tenant, recs)
		}
	}
}

// writeTenant commits records of one tenant in one transaction and
// publishes the events it wrote.
func (r *recorder) writeTenant(ctx context.Context, tenant string, recs []*record) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var published []events.Event
	err := r.st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		ds := make([]store.RouteDecision, 0, len(recs))
		var evs []events.Event
		var charges []store.UsageCharge
		for _, rec := range recs {
			ds = append(ds, rec.decision)
			evs = append(evs, rec.events...)
			charges = append(charges, rec.charges...)
		}
		if err := tx.RouteDecisionInsert(ctx, ds); err != nil {
			return err
		}
		if len(charges) > 0 {
			if _, _, err := tx.UsageCharge(ctx, mergeCharges(charges)); err != nil {
				return err
			}
		}
		var err error
		published, err = tx.RouteEventsInsert(ctx, evs)
		return err
	})
	if err != nil {
		r.log.Error("model router: write records", "tenant", tenant, "records", len(recs), "err", err)
		return
	}
	for _, ev := range published {
		r.bus.Publish(ev)
	}
}

// mergeCharges sums the charges of a batch per counter (key and window),
// in the order each counter first appears. A call's charges carry no
// caps (the budget was checked before the call), so one charge of the
// sum is the same as the charges one after another.
func mergeCharges(cs []store.UsageCharge) []store.UsageCharge {
	type counter struct {
		key   string
		start int64
	}
	at := make(map[counter]int, len(cs))
	out := make([]store.UsageCharge, 0, len(cs))
	for _, c := range cs {
		if c.MaxCalls != 0 || c.MaxCost != 0 {
			out = append(out, c)
			continue
		}
		k := counter{c.Key, c.WindowStart.UnixMicro()}
		if i, ok := at[k]; ok {
			out[i].Calls += c.Calls
			out[i].Cost += c.Cost
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	return out
}
