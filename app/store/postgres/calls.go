package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// qWriteCall calls warden_write_call (migration 0005) with one write.
const qWriteCall = `SELECT conflict, holder, exceeded, total_calls, total_costs, first_rv, first_seq
	FROM warden_write_call($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)`

// Sync waits for the WAL to be flushed past every commit made before it was
// called: it commits a transaction of its own that wrote WAL (a
// transactional logical message, prefix warden.sync, which needs no table
// and no privilege) with synchronous_commit on, and such a commit returns
// only when the WAL up to its commit record, and therefore everything
// written before it, is flushed. (A transaction that only took an xid, such
// as SELECT txid_current(), commits without waiting for a flush.) Calls
// that arrive while one is in flight share the next.
func (s *Store) Sync(ctx context.Context) error {
	return s.syncer.wait(ctx)
}

// syncer groups Sync calls: one flush at a time, covering every caller
// that arrived before it started.
type syncer struct {
	pool    *pgxpool.Pool
	mu      sync.Mutex
	waiting []chan error
	running bool
}

func (y *syncer) wait(ctx context.Context) error {
	ch := make(chan error, 1)
	y.mu.Lock()
	y.waiting = append(y.waiting, ch)
	if !y.running {
		y.running = true
		go y.run(context.WithoutCancel(ctx))
	}
	y.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (y *syncer) run(ctx context.Context) {
	for {
		y.mu.Lock()
		ws := y.waiting
		y.waiting = nil
		if len(ws) == 0 {
			y.running = false
			y.mu.Unlock()
			return
		}
		y.mu.Unlock()
		// One round trip; synchronous_commit is set for the transaction,
		// whatever the role's or database's default.
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(`SELECT set_config('synchronous_commit', 'on', true), pg_logical_emit_message(true, 'warden.sync', '')`)
		b.Queue(`COMMIT`)
		err := y.pool.SendBatch(ctx, b).Close()
		if err != nil {
			err = fmt.Errorf("postgres: sync: %w", err)
		}
		for _, ch := range ws {
			ch <- err
		}
	}
}

// WriteCalls sends the whole transaction (BEGIN, the tenant, the tenant's
// lock, one warden_write_call per write, the counters and the commit
// notification, COMMIT) as one pipelined batch: one round trip, during
// which the tenant's lock is held while the server runs the statements
// (and, when durable, flushes the commit).
func (s *Store) WriteCalls(ctx context.Context, tenant string, ws []*store.CallWrite, durable bool) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	if len(ws) == 0 {
		return nil
	}
	now := s.now()
	preps := make([]*store.PreparedCallWrite, len(ws))
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	// Unless durable, the commit does not wait for its WAL flush
	// (synchronous_commit off for this transaction): the tenant's lock is
	// released at once, and the next batch runs while this one is
	// flushed. Callers then wait for the flush with Sync before they act
	// on the writes.
	syncCommit := "on"
	if !durable {
		syncCommit = "off"
	}
	batch.Queue(`SELECT set_config('warden.tenant_id', $1, true), set_config('synchronous_commit', $2, true)`, tenant, syncCommit)
	batch.Queue(`SELECT warden_write_calls_begin()`)
	config := false
	for i, w := range ws {
		p, err := w.Prepare(now)
		if err != nil {
			return &store.BatchError{Index: i, Err: err}
		}
		preps[i] = p
		batch.Queue(qWriteCall, writeCallArgs(w, p)...)
		for _, o := range p.Creates {
			config = config || !resource.IsRecordKind(o.Object.Kind)
		}
		if p.Update != nil {
			config = config || !resource.IsRecordKind(p.Update.Object.Kind)
		}
	}
	batch.Queue(`SELECT warden_write_calls_end(), pg_notify($1, $2)`, notifyChannel, notifyPayload(tenant, config))
	batch.Queue(`COMMIT`)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: write calls: %w", err)
	}
	defer conn.Release()
	type outcome struct {
		conflict          bool
		holder            string
		exceeded          int32
		calls             []int64
		costs             []float64
		firstRV, firstSeq int64
	}
	outs := make([]outcome, len(ws))
	br := conn.SendBatch(ctx, batch)
	failed, failure := -1, error(nil)
	if _, err := br.Exec(); err != nil {
		failure = fmt.Errorf("begin: %w", err)
	} else if _, err := br.Exec(); err != nil {
		failure = fmt.Errorf("set tenant: %w", err)
	} else if _, err := br.Exec(); err != nil {
		failure = fmt.Errorf("lock tenant state: %w", err)
	}
	for i := range ws {
		if failure != nil {
			break
		}
		o := &outs[i]
		if err := br.QueryRow().Scan(&o.conflict, &o.holder, &o.exceeded, &o.calls, &o.costs, &o.firstRV, &o.firstSeq); err != nil {
			failed, failure = i, err
		}
	}
	if failure == nil {
		if _, err := br.Exec(); err != nil {
			failure = fmt.Errorf("save tenant state: %w", err)
		} else if _, err := br.Exec(); err != nil {
			failure = fmt.Errorf("commit: %w", err)
		}
	}
	if err := br.Close(); err != nil && failure == nil {
		failure = err
	}
	if failure != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			// The pool drops a connection left inside a transaction, so
			// a failed rollback only costs a reconnection.
			_, _ = conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
		failure = interpretError(failure)
		if failed >= 0 {
			return &store.BatchError{Index: failed, Err: failure}
		}
		return fmt.Errorf("postgres: write calls: %w", failure)
	}
	s.notifier.Notify(tenant)
	if config {
		s.configNotifier.Notify(tenant)
	}

	for i, w := range ws {
		o, p := outs[i], preps[i]
		switch {
		case o.conflict:
			w.Err = fmt.Errorf("status update of %s: %w", w.Update.Stored.Key(), store.ErrConflict)
			continue
		case o.holder != "":
			w.Holder = o.holder
			continue
		}
		if len(p.Charges) > 0 {
			w.Totals = make([]store.UsageTotal, len(p.Charges))
			for j := range w.Totals {
				if j < len(o.calls) && j < len(o.costs) {
					w.Totals[j] = store.UsageTotal{Calls: o.calls[j], Cost: o.costs[j]}
				}
			}
			if o.exceeded >= 0 {
				w.Exceeded = int(o.exceeded)
				continue
			}
			store.SettleUsageTotals(p.Charges, w.Totals)
		}
		rv := o.firstRV
		if w.Update != nil {
			if p.Update == nil {
				w.Updated = w.Update.Stored
			} else {
				w.Updated = p.Update.Stored(rv)
				rv++
			}
		}
		for _, c := range p.Creates {
			w.Created = append(w.Created, c.Stored(rv))
			rv++
		}
		for j, pe := range p.Events {
			ev := pe.Event
			ev.Seq, ev.Tenant = o.firstSeq+int64(j), tenant
			w.Inserted = append(w.Inserted, ev)
		}
	}
	return nil
}

// writeCallArgs renders a prepared write as warden_write_call's arguments.
// Versions are allocated by the function, which writes them into the
// objects (the placeholder is sent as 0).
func writeCallArgs(w *store.CallWrite, p *store.PreparedCallWrite) []any {
	args := make([]any, 0, 32)
	if w.Update != nil {
		k := w.Update.Stored.Key()
		if p.Update != nil {
			args = append(args, k.Kind, k.Namespace, k.Name, p.UpdateVersion, string(p.Update.Labels), string(p.Update.JSON(0)))
		} else {
			args = append(args, k.Kind, k.Namespace, k.Name, p.UpdateVersion, nil, nil)
		}
	} else {
		args = append(args, nil, nil, nil, nil, nil, nil)
	}
	if c := p.Claim; c != nil {
		args = append(args, c.Namespace, c.Key, c.Call, c.Now, store.IdempotencyExpiry(*c), c.Force)
	} else {
		args = append(args, nil, nil, nil, nil, nil, nil)
	}
	n := len(p.Charges)
	keys, windows, calls, costs, maxCalls, maxCosts := make([]string, n), make([]time.Time, n), make([]int64, n),
		make([]float64, n), make([]int64, n), make([]float64, n)
	for i, c := range p.Charges {
		keys[i], windows[i], calls[i], costs[i], maxCalls[i], maxCosts[i] = c.Key, c.WindowStart, c.Calls, c.Cost, c.MaxCalls, c.MaxCost
	}
	args = append(args, keys, windows, calls, costs, maxCalls, maxCosts)
	n = len(p.Creates)
	kinds, nss, names, uids, labels, objects := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	for i, e := range p.Creates {
		o := e.Object
		kinds[i], nss[i], names[i], uids[i] = o.Kind, o.Metadata.Namespace, o.Metadata.Name, o.Metadata.UID
		labels[i], objects[i] = string(e.Labels), string(e.JSON(0))
	}
	args = append(args, kinds, nss, names, uids, labels, objects)
	if r := w.Release; r != nil {
		args = append(args, r.Namespace, r.Key, r.Call)
	} else {
		args = append(args, nil, nil, nil)
	}
	n = len(p.Events)
	types, times, evNss, subjects, datas := make([]string, n), make([]time.Time, n), make([]string, n),
		make([]string, n), make([]*string, n)
	for i, ev := range p.Events {
		types[i], times[i], evNss[i], subjects[i] = ev.Type, ev.Time, ev.Namespace, ev.Subject
		if ev.Data != nil {
			d := string(ev.Data)
			datas[i] = &d
		}
	}
	return append(args, types, times, evNss, subjects, datas)
}
