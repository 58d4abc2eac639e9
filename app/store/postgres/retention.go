package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// RecordsOldest returns up to limit resources of kind after the version
// after, least recently written first, through the index on (tenant_id,
// kind, rv) (migration 0009).
func (t *readTx) RecordsOldest(ctx context.Context, kind string, after int64, limit int) ([]*resource.Object, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("oldest %s: limit must be positive, got %d", kind, limit)
	}
	out, err := t.scanObjects(ctx, `SELECT object FROM resources WHERE tenant_id = $1 AND kind = $2 AND rv > $3 ORDER BY rv LIMIT $4`,
		t.tenant, kind, after, limit)
	if err != nil {
		return nil, fmt.Errorf("oldest %s: %w", kind, err)
	}
	return out, nil
}

// AuditCheckpoint returns the tenant's audit checkpoint, nil when none.
func (t *readTx) AuditCheckpoint(ctx context.Context) (*audit.Checkpoint, error) {
	cp := audit.Checkpoint{Tenant: t.tenant}
	err := t.q.QueryRow(ctx, `SELECT seq, hash, time, cut_at, seal FROM audit_checkpoints WHERE tenant_id = $1`, t.tenant).
		Scan(&cp.Seq, &cp.Hash, &cp.Time, &cp.CutAt, &cp.Seal)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit checkpoint: %w", err)
	}
	cp.Time, cp.CutAt = cp.Time.UTC(), cp.CutAt.UTC()
	return &cp, nil
}

// RecordsPurge deletes the records still at their version in one
// statement and appends their DELETED changes, identity only, in another.
func (t *writeTx) RecordsPurge(ctx context.Context, objs []*resource.Object) (int, error) {
	ps, err := store.PreparePurge(objs)
	if err != nil || len(ps) == 0 {
		return 0, err
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return 0, err
	}
	kinds, namespaces, names, versions := make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps)), make([]int64, len(ps))
	for i, p := range ps {
		kinds[i], namespaces[i], names[i], versions[i] = p.Key.Kind, p.Key.Namespace, p.Key.Name, p.Version
	}
	rows, err := t.q.Query(ctx, `DELETE FROM resources r
		USING unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS d(kind, namespace, name, rv, i)
		WHERE r.tenant_id = $1 AND r.kind = d.kind AND r.namespace = d.namespace AND r.name = d.name AND r.rv = d.rv
		RETURNING d.i`, t.tenant, kinds, namespaces, names, versions)
	if err != nil {
		return 0, fmt.Errorf("purge records: %w", err)
	}
	deleted, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("purge records: %w", err)
	}
	if len(deleted) == 0 {
		return 0, nil
	}
	slices.Sort(deleted)
	n := len(deleted)
	rvs, ckinds, cnamespaces, cnames, objects := make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for j, i := range deleted {
		p := ps[i-1]
		rv := st.rv + int64(j) + 1
		b, err := p.Tombstone(rv)
		if err != nil {
			return 0, err
		}
		rvs[j], ckinds[j], cnamespaces[j], cnames[j], objects[j] = rv, p.Key.Kind, p.Key.Namespace, p.Key.Name, string(b)
	}
	if _, err := t.q.Exec(ctx, `INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
		SELECT $1, unnest($2::bigint[]), $3, unnest($4::text[]), unnest($5::text[]), unnest($6::text[]), unnest($7::text[])::jsonb`,
		t.tenant, rvs, store.ChangeDeleted, ckinds, cnamespaces, cnames, objects); err != nil {
		return 0, fmt.Errorf("purge records: append DELETED changes: %w", err)
	}
	st.rv, t.dirty = st.rv+int64(n), true
	t.changed = true
	return n, nil
}

// EventSweep deletes, among the limit oldest events, those stored before
// before.
func (t *writeTx) EventSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("event sweep: limit must be positive, got %d", limit)
	}
	tag, err := t.q.Exec(ctx, `DELETE FROM events e USING (
			SELECT seq FROM (SELECT seq, time FROM events WHERE tenant_id = $1 ORDER BY seq LIMIT $2) head WHERE time < $3
		) old WHERE e.tenant_id = $1 AND e.seq = old.seq`, t.tenant, limit, before)
	if err != nil {
		return 0, fmt.Errorf("event sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// SessionSweep deletes up to limit expired sessions of the tenant through
// warden_session_sweep (migration 0009): the app role has no privilege on
// the sessions table.
func (t *writeTx) SessionSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("session sweep: limit must be positive, got %d", limit)
	}
	var n int
	if err := t.q.QueryRow(ctx, `SELECT warden_session_sweep($1, $2)`, before, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("session sweep: %w", err)
	}
	return n, nil
}

// AuditCut stores cp and deletes the records it stands for; the
// restrictive policy audit_cut (migration 0009) refuses to delete any
// other.
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
	var at time.Time
	err = t.q.QueryRow(ctx, `SELECT hash, time FROM audit_log WHERE tenant_id = $1 AND seq = $2`, t.tenant, cp.Seq).Scan(&hash, &at)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (hash != cp.Hash || !at.Equal(cp.Time))) {
		return 0, fmt.Errorf("audit cut at %d: no such record: %w", cp.Seq, store.ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("audit cut at %d: %w", cp.Seq, err)
	}
	if _, err := t.q.Exec(ctx, `INSERT INTO audit_checkpoints (tenant_id, seq, hash, time, cut_at, seal) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
			cut_at = excluded.cut_at, seal = excluded.seal`,
		t.tenant, cp.Seq, cp.Hash, cp.Time, cp.CutAt, cp.Seal); err != nil {
		return 0, fmt.Errorf("audit cut at %d: store the checkpoint: %w", cp.Seq, err)
	}
	tag, err := t.q.Exec(ctx, `DELETE FROM audit_log WHERE tenant_id = $1 AND seq <= $2`, t.tenant, cp.Seq)
	if err != nil {
		return 0, fmt.Errorf("audit cut at %d: %w", cp.Seq, err)
	}
	return int(tag.RowsAffected()), nil
}
