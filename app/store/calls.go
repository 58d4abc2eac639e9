package store

import (
	"context"
	"errors"
	"fmt"
)

// ApplyCallWrites applies ws through tx's methods as CallWriter.WriteCalls
// specifies. Drivers for which a transaction costs no round trips (SQLite)
// implement WriteCalls with it inside one Update; it is also the reference
// the others are tested against.
func ApplyCallWrites(ctx context.Context, tx Tx, ws []*CallWrite) error {
	for i, w := range ws {
		if err := applyCallWrite(ctx, tx, w); err != nil {
			return &BatchError{Index: i, Err: err}
		}
	}
	return nil
}

func applyCallWrite(ctx context.Context, tx Tx, w *CallWrite) error {
	w.reset()
	if u := w.Update; u != nil {
		if u.Stored == nil {
			return errors.New("status update: stored object is required")
		}
		key := u.Stored.Key()
		out, err := tx.ResourceUpdateStatus(ctx, key, u.Status, u.Stored.Metadata.ResourceVersion)
		switch {
		case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
			w.Err = fmt.Errorf("status update of %s: %w", key, ErrConflict)
			return nil
		case err != nil:
			return err
		}
		w.Updated = out
	}
	claimed := false
	if c := w.Claim; c != nil {
		h, err := tx.IdempotencyClaim(ctx, *c)
		if err != nil {
			return err
		}
		if h != "" && h != c.Call {
			w.Holder = h
			return nil
		}
		claimed = h == ""
	}
	if len(w.Charges) > 0 {
		totals, exceeded, err := tx.UsageCharge(ctx, w.Charges)
		if err != nil {
			return err
		}
		w.Totals = totals
		if exceeded >= 0 {
			w.Exceeded = exceeded
			if claimed {
				return tx.IdempotencyRelease(ctx, w.Claim.Namespace, w.Claim.Key, w.Claim.Call)
			}
			return nil
		}
	}
	for _, o := range w.Creates {
		out, err := tx.ResourceCreate(ctx, o)
		if err != nil {
			return err
		}
		w.Created = append(w.Created, out)
	}
	if r := w.Release; r != nil {
		if r.Key == "" || r.Call == "" {
			return errors.New("idempotency release: key and call are required")
		}
		if err := tx.IdempotencyRelease(ctx, r.Namespace, r.Key, r.Call); err != nil {
			return err
		}
	}
	for _, ev := range w.Events {
		out, err := tx.EventInsert(ctx, ev)
		if err != nil {
			return err
		}
		w.Inserted = append(w.Inserted, out)
	}
	return nil
}
