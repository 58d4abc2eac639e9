package sqlite

import (
	"context"
	"fmt"

	"github.com/warden-dev/warden/app/store"
)

// qUpdateResourceAt is qUpdateResource with the stored version as
// precondition.
const qUpdateResourceAt = `UPDATE resources SET rv = ?, labels = ?, object = ?
	WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ? AND rv = ?`

// WriteCalls applies the writes in one transaction on the writer
// connection. The encoding was done by the callers (CallWrite.Prepare), so
// the single writer only runs statements.
// A commit is as durable as it gets when it returns, so durable changes
// nothing.
func (s *Store) WriteCalls(ctx context.Context, tenant string, ws []*store.CallWrite, _ bool) error {
	return s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		t := tx.(*writeTx)
		for i, w := range ws {
			if err := t.writeCall(ctx, w); err != nil {
				return &store.BatchError{Index: i, Err: err}
			}
		}
		return nil
	})
}

// Sync has nothing to wait for: a commit on the writer connection returns
// when it is as durable as the database's synchronous setting makes it.
func (s *Store) Sync(context.Context) error { return nil }

// writeCall applies one write as store.CallWriter specifies.
func (t *writeTx) writeCall(ctx context.Context, w *store.CallWrite) error {
	p, err := w.Prepare(t.s.now())
	if err != nil {
		return err
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return err
	}
	if u := w.Update; u != nil {
		key := u.Stored.Key()
		if p.Update == nil {
			var one int
			err := t.q.QueryRowContext(ctx, `SELECT 1 FROM resources WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ? AND rv = ?`,
				t.tenant, key.Kind, key.Namespace, key.Name, p.UpdateVersion).Scan(&one)
			if err != nil {
				w.Err = fmt.Errorf("status update of %s: %w", key, store.ErrConflict)
				return nil
			}
			w.Updated = u.Stored
		} else {
			rv := st.rv + 1
			b := p.Update.JSON(rv)
			res, err := t.q.ExecContext(ctx, qUpdateResourceAt, rv, p.Update.Labels, b,
				t.tenant, key.Kind, key.Namespace, key.Name, p.UpdateVersion)
			if err != nil {
				return fmt.Errorf("update %s: %w", key, err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				w.Err = fmt.Errorf("status update of %s: %w", key, store.ErrConflict)
				return nil
			}
			out := p.Update.Stored(rv)
			if err := t.appendChange(ctx, store.ChangeModified, rv, out, b); err != nil {
				return err
			}
			st.rv, t.dirty = rv, true
			w.Updated = out
		}
	}
	claimed := false
	if c := p.Claim; c != nil {
		h, err := t.IdempotencyClaim(ctx, *c)
		if err != nil {
			return err
		}
		if h != "" && h != c.Call {
			w.Holder = h
			return nil
		}
		claimed = h == ""
	}
	if len(p.Charges) > 0 {
		totals, exceeded, err := t.UsageCharge(ctx, p.Charges)
		if err != nil {
			return err
		}
		w.Totals = totals
		if exceeded >= 0 {
			w.Exceeded = exceeded
			if claimed {
				return t.IdempotencyRelease(ctx, p.Claim.Namespace, p.Claim.Key, p.Claim.Call)
			}
			return nil
		}
	}
	for _, e := range p.Creates {
		rv := st.rv + 1
		out := e.Stored(rv)
		if err := t.insertResource(ctx, st, out, e.Labels, e.JSON(rv), rv); err != nil {
			return err
		}
		w.Created = append(w.Created, out)
	}
	if r := w.Release; r != nil {
		if err := t.IdempotencyRelease(ctx, r.Namespace, r.Key, r.Call); err != nil {
			return err
		}
	}
	for _, pe := range p.Events {
		ev := pe.Event
		ev.Seq, ev.Tenant = st.eventSeq+1, t.tenant
		if err := t.insertEvent(ctx, st, ev, pe.Data); err != nil {
			return err
		}
		w.Inserted = append(w.Inserted, ev)
	}
	return nil
}
