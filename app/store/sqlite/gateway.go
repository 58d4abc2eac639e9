package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// The tool gateway's claims and counters. The single writer connection
// serializes every write, so each operation is one upsert whose WHERE
// decides it; the statements are the Postgres driver's (which relies on
// the upsert's row lock instead), except that the claim reports success by
// the rows it changed rather than by RETURNING. None of them touches
// tenant_state.
const (
	// qIdempotencyClaim inserts a claim or takes over one that is
	// released, expired (claimed at or before the expiry) or forced; it
	// changes a row only when the claim was taken (no RETURNING: reading
	// a row back cost more than the statement).
	qIdempotencyClaim = `INSERT INTO idempotency_keys AS k (tenant_id, namespace, key, call, claimed_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, namespace, key) DO UPDATE
		SET call = excluded.call, claimed_at = excluded.claimed_at, released = 0
		WHERE k.released OR k.claimed_at <= ? OR ?`
	qIdempotencyHolder = `SELECT call FROM idempotency_keys WHERE tenant_id = ? AND namespace = ? AND key = ?`
	// qIdempotencyLive reads the holder of a claim that still blocks
	// others: not released and claimed after the expiry.
	qIdempotencyLive = `SELECT call FROM idempotency_keys
		WHERE tenant_id = ? AND namespace = ? AND key = ? AND NOT released AND claimed_at > ?`
	qIdempotencyRelease = `UPDATE idempotency_keys SET released = 1
		WHERE tenant_id = ? AND namespace = ? AND key = ? AND call = ? AND NOT released`
	// qUsageCharge adds to a counter unless the result would pass a
	// non-zero cap; it returns the new totals only when it added. A new
	// row is not checked: callers refuse a charge that alone passes a cap.
	qUsageCharge = `INSERT INTO usage_counters AS u (tenant_id, key, window_start, calls, cost)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, key, window_start) DO UPDATE
		SET calls = u.calls + excluded.calls, cost = u.cost + excluded.cost
		WHERE (? = 0 OR u.calls + excluded.calls <= ?) AND (? = 0 OR u.cost + excluded.cost <= ?)
		RETURNING calls, cost`
	qUsageTakeBack = `UPDATE usage_counters SET calls = calls - ?, cost = cost - ?
		WHERE tenant_id = ? AND key = ? AND window_start = ?`
	qUsageGet = `SELECT calls, cost FROM usage_counters WHERE tenant_id = ? AND key = ? AND window_start = ?`
)

// IdempotencyClaim claims c.Key for c.Call, returning "" when taken and
// the holder's call otherwise.
func (t *writeTx) IdempotencyClaim(ctx context.Context, c store.IdempotencyClaim) (string, error) {
	c, err := store.PrepareIdempotencyClaim(c, t.s.now())
	if err != nil {
		return "", err
	}
	res, err := t.q.ExecContext(ctx, qIdempotencyClaim, t.tenant, c.Namespace, c.Key, c.Call, c.Now.UnixMicro(),
		store.IdempotencyExpiry(c).UnixMicro(), c.Force)
	if err != nil {
		return "", fmt.Errorf("idempotency claim of %s/%s: %w", c.Namespace, c.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", fmt.Errorf("idempotency claim of %s/%s: %w", c.Namespace, c.Key, err)
	} else if n == 1 {
		return "", nil
	}
	var holder string
	if err := t.q.QueryRowContext(ctx, qIdempotencyHolder, t.tenant, c.Namespace, c.Key).Scan(&holder); err != nil {
		return "", fmt.Errorf("idempotency claim of %s/%s: read holder: %w", c.Namespace, c.Key, err)
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
	err = t.q.QueryRowContext(ctx, qIdempotencyLive, t.tenant, c.Namespace, c.Key, store.IdempotencyExpiry(c).UnixMicro()).Scan(&holder)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("idempotency holder of %s/%s: %w", c.Namespace, c.Key, err)
	}
	return holder, nil
}

// ClaimHolder is IdempotencyHolder as one statement on the reader pool,
// outside a transaction (a statement alone reads one snapshot).
func (s *Store) ClaimHolder(ctx context.Context, tenant string, c store.IdempotencyClaim) (string, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return "", err
	}
	c, err := store.PrepareIdempotencyClaim(c, s.now())
	if err != nil || c.Force {
		return "", err
	}
	var holder string
	err = s.readStmts[qIdempotencyLive].QueryRowContext(ctx, tenant, c.Namespace, c.Key, store.IdempotencyExpiry(c).UnixMicro()).Scan(&holder)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("idempotency holder of %s/%s: %w", c.Namespace, c.Key, err)
	}
	return holder, nil
}

// ClaimReadFirst is true: ClaimHolder is one prepared statement.
func (s *Store) ClaimReadFirst() bool { return true }

// IdempotencyRelease releases the claim of key if call holds it.
func (t *writeTx) IdempotencyRelease(ctx context.Context, namespace, key, call string) error {
	if _, err := t.q.ExecContext(ctx, qIdempotencyRelease, t.tenant, namespace, key, call); err != nil {
		return fmt.Errorf("idempotency release of %s/%s: %w", namespace, key, err)
	}
	return nil
}

// UsageCharge adds the charges in order, all or none. A refusal subtracts
// the charges already added (exact for calls; cost, a float, is restored
// up to rounding) and reads every counter again.
func (t *writeTx) UsageCharge(ctx context.Context, charges []store.UsageCharge) ([]store.UsageTotal, int, error) {
	charges, err := store.PrepareUsageCharges(charges)
	if err != nil {
		return nil, -1, err
	}
	totals := make([]store.UsageTotal, len(charges))
	exceeded := -1
	for i, c := range charges {
		if store.UsageChargeRefusedAlone(c) {
			exceeded = i
			break
		}
		err := t.q.QueryRowContext(ctx, qUsageCharge, t.tenant, c.Key, c.WindowStart.UnixMicro(), c.Calls, c.Cost,
			c.MaxCalls, c.MaxCalls, c.MaxCost, c.MaxCost).Scan(&totals[i].Calls, &totals[i].Cost)
		if errors.Is(err, sql.ErrNoRows) {
			exceeded = i
			break
		}
		if err != nil {
			return nil, -1, fmt.Errorf("usage charge %s: %w", c.Key, err)
		}
	}
	if exceeded < 0 {
		store.SettleUsageTotals(charges, totals)
		return totals, -1, nil
	}
	for i := exceeded - 1; i >= 0; i-- {
		c := charges[i]
		if _, err := t.q.ExecContext(ctx, qUsageTakeBack, c.Calls, c.Cost, t.tenant, c.Key, c.WindowStart.UnixMicro()); err != nil {
			return nil, -1, fmt.Errorf("usage charge %s: take back: %w", c.Key, err)
		}
	}
	totals, err = t.UsageGet(ctx, store.UsageKeysOf(charges))
	if err != nil {
		return nil, -1, err
	}
	return totals, exceeded, nil
}

// UsageGet returns the counters of keys, zero for those never charged.
func (t *readTx) UsageGet(ctx context.Context, keys []store.UsageKey) ([]store.UsageTotal, error) {
	keys, err := store.PrepareUsageKeys(keys)
	if err != nil {
		return nil, err
	}
	out := make([]store.UsageTotal, len(keys))
	for i, k := range keys {
		err := t.q.QueryRowContext(ctx, qUsageGet, t.tenant, k.Key, k.WindowStart.UnixMicro()).Scan(&out[i].Calls, &out[i].Cost)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("usage get %s: %w", k.Key, err)
		}
	}
	return out, nil
}

// IdempotencySweep deletes up to limit claims made before before, oldest
// first, through the index on (tenant_id, claimed_at) (migration 0005).
func (t *writeTx) IdempotencySweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("idempotency sweep: limit must be positive, got %d", limit)
	}
	return t.deleted(ctx, "idempotency sweep", `DELETE FROM idempotency_keys WHERE tenant_id = ? AND (namespace, key) IN (
		SELECT namespace, key FROM idempotency_keys WHERE tenant_id = ? AND claimed_at < ? ORDER BY claimed_at LIMIT ?)`,
		t.tenant, t.tenant, before.UnixMicro(), limit)
}

// UsageSweep deletes the counters of windows that started before before.
func (t *writeTx) UsageSweep(ctx context.Context, before time.Time) (int, error) {
	return t.deleted(ctx, "usage sweep", `DELETE FROM usage_counters WHERE tenant_id = ? AND window_start < ?`, t.tenant, before.UnixMicro())
}

// deleted runs a DELETE and returns how many rows it deleted; what names it
// in errors.
func (t *writeTx) deleted(ctx context.Context, what, query string, args ...any) (int, error) {
	res, err := t.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return int(n), nil
}
