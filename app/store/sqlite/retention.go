package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// RecordsOldest returns up to limit resources of kind after the version
// after, least recently written first, through the index on (tenant_id,
// kind, rv) (migration 0007).
func (t *readTx) RecordsOldest(ctx context.Context, kind string, after int64, limit int) ([]*resource.Object, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("oldest %s: limit must be positive, got %d", kind, limit)
	}
	out, err := t.scanObjects(ctx, `SELECT object FROM resources WHERE tenant_id = ? AND kind = ? AND rv > ? ORDER BY rv LIMIT ?`,
		t.tenant, kind, after, limit)
	if err != nil {
		return nil, fmt.Errorf("oldest %s: %w", kind, err)
	}
	return out, nil
}

// AuditCheckpoint returns the tenant's audit checkpoint, nil when none.
func (t *readTx) AuditCheckpoint(ctx context.Context) (*audit.Checkpoint, error) {
	cp := audit.Checkpoint{Tenant: t.tenant}
	var at, cutAt int64
	err := t.q.QueryRowContext(ctx, `SELECT seq, hash, time, cut_at, seal FROM audit_checkpoints WHERE tenant_id = ?`, t.tenant).
		Scan(&cp.Seq, &cp.Hash, &at, &cutAt, &cp.Seal)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit checkpoint: %w", err)
	}
	cp.Time, cp.CutAt = time.UnixMicro(at).UTC(), time.UnixMicro(cutAt).UTC()
	return &cp, nil
}

// RecordsPurge deletes the records still at their version, each with a
// DELETED change carrying its identity only.
func (t *writeTx) RecordsPurge(ctx context.Context, objs []*resource.Object) (int, error) {
	ps, err := store.PreparePurge(objs)
	if err != nil || len(ps) == 0 {
		return 0, err
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		res, err := t.q.ExecContext(ctx, `DELETE FROM resources WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ? AND rv = ?`,
			t.tenant, p.Key.Kind, p.Key.Namespace, p.Key.Name, p.Version)
		if err != nil {
			return n, fmt.Errorf("purge %s: %w", p.Key, err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			continue
		}
		rv := st.rv + 1
		b, err := p.Tombstone(rv)
		if err != nil {
			return n, err
		}
		if _, err := t.q.ExecContext(ctx, qInsertChange, t.tenant, rv, store.ChangeDeleted, p.Key.Kind, p.Key.Namespace, p.Key.Name, b); err != nil {
			return n, fmt.Errorf("append DELETED change of %s: %w", p.Key, err)
		}
		t.changed = true
		st.rv, t.dirty = rv, true
		n++
	}
	return n, nil
}

// EventSweep deletes, among the limit oldest events, those stored before
// before.
func (t *writeTx) EventSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("event sweep: limit must be positive, got %d", limit)
	}
	return t.deleted(ctx, "event sweep", `DELETE FROM events WHERE tenant_id = ? AND seq IN (
		SELECT seq FROM (SELECT seq, time FROM events WHERE tenant_id = ? ORDER BY seq LIMIT ?) WHERE time < ?)`,
		t.tenant, t.tenant, limit, before.UnixMicro())
}

// SessionSweep deletes up to limit sessions of the tenant that expired
// before before, through the index on (tenant_id, expires_at).
func (t *writeTx) SessionSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("session sweep: limit must be positive, got %d", limit)
	}
	return t.deleted(ctx, "session sweep", `DELETE FROM sessions WHERE id_hash IN (
		SELECT id_hash FROM sessions WHERE tenant_id = ? AND expires_at < ? ORDER BY expires_at LIMIT ?)`,
		t.tenant, before.UnixMicro(), limit)
}

// AuditCut stores cp and deletes the records it stands for; the trigger
// of migration 0007 refuses to delete any other.
func (t *writeTx) AuditCut(ctx context.Context, cp audit.Checkpoint) (int, error) {
	if err := store.CheckAuditCut(t.tenant, cp); err != nil {
		return 0, err
	}
	if _, err := t.lockState(ctx); err != nil {
		return 0, err
	}
	cur, err := t.AuditCheckpoint(ctx)
	if err != nil {
		return 0, err
	}
	if cur != nil && cp.Seq <= cur.Seq {
		return 0, fmt.Errorf("audit cut at %d: the checkpoint is already at %d: %w", cp.Seq, cur.Seq, store.ErrConflict)
	}
	var hash string
	var at int64
	err = t.q.QueryRowContext(ctx, `SELECT hash, time FROM audit_log WHERE tenant_id = ? AND seq = ?`, t.tenant, cp.Seq).Scan(&hash, &at)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (hash != cp.Hash || at != cp.Time.UnixMicro())) {
		return 0, fmt.Errorf("audit cut at %d: no such record: %w", cp.Seq, store.ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("audit cut at %d: %w", cp.Seq, err)
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO audit_checkpoints (tenant_id, seq, hash, time, cut_at, seal) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
			cut_at = excluded.cut_at, seal = excluded.seal`,
		t.tenant, cp.Seq, cp.Hash, cp.Time.UnixMicro(), cp.CutAt.UnixMicro(), cp.Seal); err != nil {
		return 0, fmt.Errorf("audit cut at %d: store the checkpoint: %w", cp.Seq, err)
	}
	return t.deleted(ctx, "audit cut", `DELETE FROM audit_log WHERE tenant_id = ? AND seq <= ?`, t.tenant, cp.Seq)
}
