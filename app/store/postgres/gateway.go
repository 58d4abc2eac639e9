package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/store"
)

// The tool gateway's claims and counters. Each operation is an upsert whose
// WHERE decides it: in READ COMMITTED, INSERT ... ON CONFLICT DO UPDATE
// locks the conflicting row and evaluates WHERE against its newest
// committed version, so concurrent claims or charges of one row, on any
// replica, serialize on that row lock and each sees the others' effects.
// None of them touches tenant_state, so they do not queue behind the
// tenant's resource writers.
const (
	// qIdempotencyClaim inserts a claim or takes over one that is
	// released, expired (claimed at or before $6) or forced ($7); it
	// returns a row only when the claim was taken.
	qIdempotencyClaim = `INSERT INTO idempotency_keys AS k (tenant_id, namespace, key, call, claimed_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, namespace, key) DO UPDATE
		SET call = excluded.call, claimed_at = excluded.claimed_at, released = false
		WHERE k.released OR k.claimed_at <= $6 OR $7::boolean
		RETURNING call`
	qIdempotencyHolder = `SELECT call FROM idempotency_keys WHERE tenant_id = $1 AND namespace = $2 AND key = $3`
	// qIdempotencyLive reads the holder of a claim that still blocks
	// others: not released and claimed after the expiry ($4).
	qIdempotencyLive = `SELECT call FROM idempotency_keys
		WHERE tenant_id = $1 AND namespace = $2 AND key = $3 AND NOT released AND claimed_at > $4`
	qIdempotencyRelease = `UPDATE idempotency_keys SET released = true
		WHERE tenant_id = $1 AND namespace = $2 AND key = $3 AND call = $4 AND NOT released`
	// qUsageCharge adds to a counter unless the result would pass a
	// non-zero cap ($6 calls, $7 cost); it returns the new totals only when
	// it added. A new row is not checked: callers refuse a charge that
	// alone passes a cap.
	qUsageCharge = `INSERT INTO usage_counters AS u (tenant_id, key, window_start, calls, cost)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, key, window_start) DO UPDATE
		SET calls = u.calls + excluded.calls, cost = u.cost + excluded.cost
		WHERE ($6::bigint = 0 OR u.calls + excluded.calls <= $6::bigint)
			AND ($7::float8 = 0 OR u.cost + excluded.cost <= $7::float8)
		RETURNING calls, cost`
	qUsageTakeBack = `UPDATE usage_counters SET calls = calls - $4, cost = cost - $5
		WHERE tenant_id = $1 AND key = $2 AND window_start = $3`
	qUsageGet = `SELECT k.i, u.calls, u.cost
		FROM unnest($2::text[], $3::timestamptz[]) WITH ORDINALITY AS k(key, window_start, i)
		JOIN usage_counters u ON u.tenant_id = $1 AND u.key = k.key AND u.window_start = k.window_start`
)

// IdempotencyClaim claims c.Key for c.Call, returning "" when taken and
// the holder's call otherwise.
func (t *writeTx) IdempotencyClaim(ctx context.Context, c store.IdempotencyClaim) (string, error) {
	c, err := store.PrepareIdempotencyClaim(c, t.s.now())
	if err != nil {
		return "", err
	}
	// The tenant's counter row is locked first, as every resource write
	// does: a transaction that claims keys and also writes records then
	// takes its locks in the one order every other writer of the tenant
	// takes them, so no two can deadlock.
	if _, err := t.lockState(ctx); err != nil {
		return "", err
	}
	var call string
	err = t.q.QueryRow(ctx, qIdempotencyClaim, t.tenant, c.Namespace, c.Key, c.Call, c.Now,
		store.IdempotencyExpiry(c), c.Force).Scan(&call)
	if err == nil {
		return "", nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", interpretError(fmt.Errorf("idempotency claim of %s/%s: %w", c.Namespace, c.Key, err))
	}
	// The upsert locked the holder's row, committed by another transaction
	// or written by this one; this statement's fresh READ COMMITTED
	// snapshot sees it, and the lock keeps it until this transaction ends.
	var holder string
	if err := t.q.QueryRow(ctx, qIdempotencyHolder, t.tenant, c.Namespace, c.Key).Scan(&holder); err != nil {
		return "", interpretError(fmt.Errorf("idempotency claim of %s/%s: read holder: %w", c.Namespace, c.Key, err))
	}
	return holder, nil
}

// IdempotencyHolder returns the call whose claim would stop c, or "".
func (t *readTx) IdempotencyHolder(ctx context.Context, c store.IdempotencyClaim) (string, error) {
	c, err := store.PrepareIdempotencyClaim(c, t.s.now())
	if err != nil || c.Force {
		return "", err
	}
	var holder string
	err = t.q.QueryRow(ctx, qIdempotencyLive, t.tenant, c.Namespace, c.Key, store.IdempotencyExpiry(c)).Scan(&holder)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", interpretError(fmt.Errorf("idempotency holder of %s/%s: %w", c.Namespace, c.Key, err))
	}
	return holder, nil
}

// ClaimHolder is IdempotencyHolder in one round trip: the read-only
// transaction, its tenant, the read and the commit sent as one batch.
func (s *Store) ClaimHolder(ctx context.Context, tenant string, c store.IdempotencyClaim) (string, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return "", err
	}
	c, err := store.PrepareIdempotencyClaim(c, s.now())
	if err != nil || c.Force {
		return "", err
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	b.Queue(`SELECT set_config('warden.tenant_id', $1, true)`, tenant)
	b.Queue(qIdempotencyLive, tenant, c.Namespace, c.Key, store.IdempotencyExpiry(c))
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, b)
	var holder string
	err = func() error {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&holder); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err := br.Exec()
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", interpretError(fmt.Errorf("idempotency holder of %s/%s: %w", c.Namespace, c.Key, err))
	}
	return holder, nil
}

// ClaimReadFirst is false: ClaimHolder is a round trip of its own per
// call, where a claim in WriteCalls shares its batch's.
func (s *Store) ClaimReadFirst() bool { return false }

// IdempotencyRelease releases the claim of key if call holds it.
func (t *writeTx) IdempotencyRelease(ctx context.Context, namespace, key, call string) error {
	if _, err := t.q.Exec(ctx, qIdempotencyRelease, t.tenant, namespace, key, call); err != nil {
		return interpretError(fmt.Errorf("idempotency release of %s/%s: %w", namespace, key, err))
	}
	return nil
}

// UsageCharge adds the charges, all or none, in one round trip: the
// upserts go out as one pipelined batch ordered by counter, so that two
// transactions charging overlapping counters lock them in the same order
// and cannot deadlock whatever order their callers chose. Charges of
// different counters are independent and those of one counter keep their
// order, so the outcome is that of applying the charges one by one in the
// given order: the first refused charge in that order is the exceeded one.
// A refusal takes the added charges back with a second statement batch
// (exact for calls; cost, a float, is restored up to rounding).
func (t *writeTx) UsageCharge(ctx context.Context, charges []store.UsageCharge) ([]store.UsageTotal, int, error) {
	charges, err := store.PrepareUsageCharges(charges)
	if err != nil {
		return nil, -1, err
	}
	// As in IdempotencyClaim: the tenant's lock first.
	if len(charges) > 0 {
		if _, err := t.lockState(ctx); err != nil {
			return nil, -1, err
		}
	}
	// Charges from the first that alone passes a cap on are never tried.
	exceeded, tried := -1, len(charges)
	for i, c := range charges {
		if store.UsageChargeRefusedAlone(c) {
			exceeded, tried = i, i
			break
		}
	}
	order := make([]int, tried)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(charges[a].Key, charges[b].Key), charges[a].WindowStart.Compare(charges[b].WindowStart))
	})
	totals := make([]store.UsageTotal, len(charges))
	added := make([]bool, len(charges))
	if len(order) > 0 {
		batch := &pgx.Batch{}
		for _, i := range order {
			c := charges[i]
			batch.Queue(qUsageCharge, t.tenant, c.Key, c.WindowStart, c.Calls, c.Cost, c.MaxCalls, c.MaxCost)
		}
		res := t.q.SendBatch(ctx, batch)
		for _, i := range order {
			err := res.QueryRow().Scan(&totals[i].Calls, &totals[i].Cost)
			switch {
			case err == nil:
				added[i] = true
			case errors.Is(err, pgx.ErrNoRows):
				if exceeded < 0 || i < exceeded {
					exceeded = i
				}
			default:
				_ = res.Close()
				return nil, -1, interpretError(fmt.Errorf("usage charge %s: %w", charges[i].Key, err))
			}
		}
		if err := res.Close(); err != nil {
			return nil, -1, interpretError(fmt.Errorf("usage charge: %w", err))
		}
	}
	if exceeded < 0 {
		store.SettleUsageTotals(charges, totals)
		return totals, -1, nil
	}
	if err := t.takeBack(ctx, charges, order, added); err != nil {
		return nil, -1, err
	}
	totals, err = t.UsageGet(ctx, store.UsageKeysOf(charges))
	if err != nil {
		return nil, -1, err
	}
	return totals, exceeded, nil
}

// takeBack subtracts the charges marked added, in lock order (the rows are
// locked by this transaction already).
func (t *writeTx) takeBack(ctx context.Context, charges []store.UsageCharge, order []int, added []bool) error {
	batch := &pgx.Batch{}
	for _, i := range order {
		if added[i] {
			c := charges[i]
			batch.Queue(qUsageTakeBack, t.tenant, c.Key, c.WindowStart, c.Calls, c.Cost)
		}
	}
	if batch.Len() == 0 {
		return nil
	}
	if err := t.q.SendBatch(ctx, batch).Close(); err != nil {
		return interpretError(fmt.Errorf("usage charge: take back: %w", err))
	}
	return nil
}

// UsageGet returns the counters of keys, zero for those never charged.
func (t *readTx) UsageGet(ctx context.Context, keys []store.UsageKey) ([]store.UsageTotal, error) {
	keys, err := store.PrepareUsageKeys(keys)
	if err != nil {
		return nil, err
	}
	out := make([]store.UsageTotal, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	names := make([]string, len(keys))
	starts := make([]time.Time, len(keys))
	for i, k := range keys {
		names[i], starts[i] = k.Key, k.WindowStart
	}
	rows, err := t.q.Query(ctx, qUsageGet, t.tenant, names, starts)
	if err != nil {
		return nil, fmt.Errorf("usage get: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var tot store.UsageTotal
		if err := rows.Scan(&i, &tot.Calls, &tot.Cost); err != nil {
			return nil, fmt.Errorf("usage get: %w", err)
		}
		out[i-1] = tot
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage get: %w", err)
	}
	return out, nil
}

// qIdempotencySweep deletes up to $3 claims made before $2, oldest first,
// through the index on (tenant_id, claimed_at) (migration 0006). The
// DELETE tests the row it deletes, not the one the scan read: a claim taken
// over meanwhile is re-read under its row lock and kept.
const qIdempotencySweep = `DELETE FROM idempotency_keys k USING (
		SELECT namespace, key FROM idempotency_keys
		WHERE tenant_id = $1 AND claimed_at < $2 ORDER BY claimed_at LIMIT $3
	) old
	WHERE k.tenant_id = $1 AND k.namespace = old.namespace AND k.key = old.key AND k.claimed_at < $2`

// IdempotencySweep deletes up to limit claims made before before, oldest
// first.
func (t *writeTx) IdempotencySweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("idempotency sweep: limit must be positive, got %d", limit)
	}
	tag, err := t.q.Exec(ctx, qIdempotencySweep, t.tenant, before, limit)
	if err != nil {
		return 0, fmt.Errorf("idempotency sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// UsageSweep deletes the counters of windows that started before before.
func (t *writeTx) UsageSweep(ctx context.Context, before time.Time) (int, error) {
	tag, err := t.q.Exec(ctx, `DELETE FROM usage_counters WHERE tenant_id = $1 AND window_start < $2`, t.tenant, before)
	if err != nil {
		return 0, fmt.Errorf("usage sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
