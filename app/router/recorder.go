package router

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
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
// per tenant. Under load hundreds of calls share a commit, and the
// request path never waits for the store. What this gives up: a process
// that dies loses the records of at most the last flushEvery (the answers
// were given, the decisions, events and charges of those calls are not
// written); a graceful stop (Close) writes everything queued. Reads that
// must see every decision (explain) call flush first, so a caller always
// reads its own decisions back.
const (
	flushEvery = 10 * time.Millisecond
	flushBatch = 512
	queueSize  = 65536
)

type recorder struct {
	st  store.Store
	bus *events.Bus
	log *slog.Logger

	// queue holds pointers: a channel's buffer is scanned whole by every
	// collection, and at queueSize records by value it was most of the
	// router's live heap.
	queue chan *record
	// flushes asks the writer to write what is queued now and closes the
	// channel it is sent once that is committed.
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}

	mu     sync.RWMutex
	closed bool
}

func newRecorder(st store.Store, bus *events.Bus, log *slog.Logger) *recorder {
	r := &recorder{st: st, bus: bus, log: log, queue: make(chan *record, queueSize),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// add queues a record. A full queue (the store far behind) blocks the
// caller rather than dropping the record.
func (r *recorder) add(rec *record) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		r.log.Warn("model router record after close: dropped", "tenant", rec.tenant, "decision", rec.decision.ID)
		return
	}
	r.queue <- rec
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
	r.mu.Unlock()
	close(r.stop)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	var batch []*record
	drain := func() {
		for len(batch) < flushBatch*4 {
			select {
			case rec := <-r.queue:
				batch = append(batch, rec)
			default:
				return
			}
		}
	}
	for {
		select {
		case rec := <-r.queue:
			batch = append(batch, rec)
			if len(batch) < flushBatch {
				continue
			}
			drain()
			r.write(batch)
			clear(batch)
			batch = batch[:0]
		case <-tick.C:
			drain()
			if len(batch) > 0 {
				r.write(batch)
				clear(batch)
				batch = batch[:0]
			}
		case done := <-r.flushes:
			drain()
			r.write(batch)
			clear(batch)
			batch = batch[:0]
			close(done)
		case <-r.stop:
			for {
				drain()
				if len(batch) == 0 {
					return
				}
				r.write(batch)
				clear(batch)
				batch = batch[:0]
			}
		}
	}
}

// write commits a batch, one transaction per tenant, and publishes the
// events it wrote.
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tenant := range order {
		recs := byTenant[tenant]
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
			continue
		}
		for _, ev := range published {
			r.bus.Publish(ev)
		}
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
