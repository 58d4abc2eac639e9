package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// querier is what a pgx.Tx offers.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// readTx implements store.Reader. Queries still name tenant_id (so the
// planner uses the primary keys); row-level security enforces it anyway.
type readTx struct {
	q      querier
	s      *Store
	tenant string
}

// ResourceGet returns one resource or store.ErrNotFound.
func (t *readTx) ResourceGet(ctx context.Context, key resource.Key) (*resource.Object, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	var b []byte
	err := t.q.QueryRow(ctx, `SELECT object FROM resources
		WHERE tenant_id = $1 AND kind = $2 AND namespace = $3 AND name = $4`,
		t.tenant, key.Kind, key.Namespace, key.Name).Scan(&b)
	if err != nil {
		return nil, interpretError(fmt.Errorf("get %s: %w", key, err))
	}
	return store.DecodeObject(b)
}

// ResourceList returns one page of resources.
func (t *readTx) ResourceList(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	rv, err := t.CurrentVersion(ctx)
	if err != nil {
		return nil, err
	}
	items, cont, err := store.ListPage(ctx, t.s.key, t.tenant, p, func(ctx context.Context, after *store.Position, n int) ([]*resource.Object, error) {
		q := `SELECT object FROM resources WHERE tenant_id = $1 AND kind = $2`
		args := []any{t.tenant, p.Kind}
		if p.Namespace != "" {
			args = append(args, p.Namespace)
			q += fmt.Sprintf(` AND namespace = $%d`, len(args))
		}
		if after != nil {
			args = append(args, after.Namespace, after.Name)
			q += fmt.Sprintf(` AND (namespace, name) > ($%d, $%d)`, len(args)-1, len(args))
		}
		args = append(args, n)
		q += fmt.Sprintf(` ORDER BY namespace, name LIMIT $%d`, len(args))
		return t.scanObjects(ctx, q, args...)
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Kind, err)
	}
	return &store.ListResult{Items: items, Continue: cont, ResourceVersion: store.FormatVersion(rv)}, nil
}

func (t *readTx) scanObjects(ctx context.Context, q string, args ...any) ([]*resource.Object, error) {
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*resource.Object
	for rows.Next() {
		o, err := store.DecodeObject(rows.RawValues()[0])
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// EventList returns persisted events after the given sequence.
func (t *readTx) EventList(ctx context.Context, after int64, limit int) ([]events.Event, error) {
	rows, err := t.q.Query(ctx, `SELECT seq, type, time, namespace, subject, data FROM events
		WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, t.tenant, after, store.PageLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		ev := events.Event{Tenant: t.tenant}
		var data []byte
		if err := rows.Scan(&ev.Seq, &ev.Type, &ev.Time, &ev.Namespace, &ev.Subject, &data); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		ev.Time = ev.Time.UTC()
		if len(data) > 0 {
			if err := json.Unmarshal(data, &ev.Data); err != nil {
				return nil, fmt.Errorf("list events: decode data of %d: %w", ev.Seq, err)
			}
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// AuditList returns audit records in chain order (or newest first), filtered.
func (t *readTx) AuditList(ctx context.Context, p store.AuditListParams) ([]audit.Record, error) {
	q := `SELECT seq, time, actor, verb, namespace, resource, outcome, policy, reason, prev_hash, hash
		FROM audit_log WHERE tenant_id = $1 AND seq > $2`
	args := []any{t.tenant, p.After}
	add := func(cond string, v any) {
		args = append(args, v)
		q += fmt.Sprintf(cond, len(args))
	}
	if p.Actor != "" {
		add(` AND actor = $%d`, p.Actor)
	}
	if p.Namespace != "" {
		add(` AND namespace = $%d`, p.Namespace)
	}
	if p.Verb != "" {
		add(` AND verb = $%d`, p.Verb)
	}
	if !p.Since.IsZero() {
		add(` AND time >= $%d`, p.Since)
	}
	if p.Before > 0 {
		add(` AND seq < $%d`, p.Before)
	}
	order := ` ORDER BY seq`
	if p.NewestFirst {
		order = ` ORDER BY seq DESC`
	}
	add(order+` LIMIT $%d`, store.PageLimit(p.Limit))
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		r := audit.Record{Tenant: t.tenant}
		if err := rows.Scan(&r.Seq, &r.Time, &r.Actor, &r.Verb, &r.Namespace, &r.Resource, &r.Outcome,
			&r.Policy, &r.Reason, &r.PrevHash, &r.Hash); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		r.Time = r.Time.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}

// CurrentVersion returns the tenant's newest resource version.
func (t *readTx) CurrentVersion(ctx context.Context) (int64, error) {
	var rv int64
	err := t.q.QueryRow(ctx, `SELECT rv FROM tenant_state WHERE tenant_id = $1`, t.tenant).Scan(&rv)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("current version: %w", err)
	}
	return rv, nil
}

func (t *readTx) changesSince(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	var floor int64
	err := t.q.QueryRow(ctx, `SELECT floor FROM tenant_state WHERE tenant_id = $1`, t.tenant).Scan(&floor)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("changes since %d: %w", after, err)
	}
	if after < floor {
		return nil, fmt.Errorf("changes since %d (retained from %d): %w", after, floor, store.ErrGone)
	}
	if limit <= 0 {
		limit = store.MaxPageSize
	}
	rows, err := t.q.Query(ctx, `SELECT rv, type, object FROM changes
		WHERE tenant_id = $1 AND rv > $2 ORDER BY rv LIMIT $3`, t.tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("changes since %d: %w", after, err)
	}
	defer rows.Close()
	var out []store.Change
	for rows.Next() {
		var c store.Change
		var b []byte
		if err := rows.Scan(&c.ResourceVersion, &c.Type, &b); err != nil {
			return nil, fmt.Errorf("changes since %d: %w", after, err)
		}
		if c.Object, err = store.DecodeObject(b); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("changes since %d: %w", after, err)
	}
	return out, nil
}

// tenantState mirrors the locked tenant_state row; flush writes it back
// before commit.
type tenantState struct {
	rv, floor, eventSeq, auditSeq int64
	auditHash                     string
}

// writeTx implements store.Tx.
type writeTx struct {
	readTx
	state *tenantState
	dirty bool
	// changed is set when the transaction appended to the change log,
	// config when one of those changes is of a configuration kind.
	changed, config bool
	// events are appended events not yet written (flushEvents).
	events []pendingEvent
}

// PgxTx returns the pgx transaction under t, so that a write outside
// Warden's tables that must commit or roll back with t can join it: River's
// InsertTx, for the resume job of an approval decision. Never use it for
// Warden's own tables, whose bookkeeping (change log, counters) t keeps.
func (t *writeTx) PgxTx() pgx.Tx {
	tx, _ := t.q.(pgx.Tx)
	return tx
}

// wrote records a change of kind.
func (t *writeTx) wrote(kind string) {
	t.changed = true
	if !resource.IsRecordKind(kind) {
		t.config = true
	}
}

// lockState creates or locks the tenant's counter row (the upsert takes a
// row lock held until commit) and loads it. Every write takes this lock
// before any other, so a tenant's writers serialize without deadlocks and
// commit in resourceVersion order.
func (t *writeTx) lockState(ctx context.Context) (*tenantState, error) {
	if t.state != nil {
		return t.state, nil
	}
	st := &tenantState{}
	err := t.q.QueryRow(ctx, `INSERT INTO tenant_state AS s (tenant_id) VALUES ($1)
		ON CONFLICT (tenant_id) DO UPDATE SET tenant_id = s.tenant_id
		RETURNING rv, floor, event_seq, audit_seq, audit_hash`, t.tenant).
		Scan(&st.rv, &st.floor, &st.eventSeq, &st.auditSeq, &st.auditHash)
	if err != nil {
		return nil, interpretError(fmt.Errorf("lock tenant state: %w", err))
	}
	t.state = st
	return st, nil
}

func (t *writeTx) flush(ctx context.Context) error {
	if !t.dirty {
		return nil
	}
	if err := t.flushEvents(ctx); err != nil {
		return err
	}
	st := t.state
	if _, err := t.q.Exec(ctx, `UPDATE tenant_state SET rv = $2, floor = $3, event_seq = $4, audit_seq = $5, audit_hash = $6
		WHERE tenant_id = $1`, t.tenant, st.rv, st.floor, st.eventSeq, st.auditSeq, st.auditHash); err != nil {
		return fmt.Errorf("save tenant state: %w", err)
	}
	return nil
}

// AuditHead returns the tenant's newest audit sequence number from its
// counter row (0 when none).
func (t *readTx) AuditHead(ctx context.Context) (int64, error) {
	var seq int64
	err := t.q.QueryRow(ctx, `SELECT audit_seq FROM tenant_state WHERE tenant_id = $1`, t.tenant).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit head: %w", err)
	}
	return seq, nil
}

// AuditHead includes the records this transaction appended.
func (t *writeTx) AuditHead(ctx context.Context) (int64, error) {
	if t.state != nil {
		return t.state.auditSeq, nil
	}
	return t.readTx.AuditHead(ctx)
}

// CurrentVersion includes the versions this transaction allocated.
func (t *writeTx) CurrentVersion(ctx context.Context) (int64, error) {
	if t.state != nil {
		return t.state.rv, nil
	}
	return t.readTx.CurrentVersion(ctx)
}

// ResourceList sees this transaction's own writes and version.
func (t *writeTx) ResourceList(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	res, err := t.readTx.ResourceList(ctx, p)
	if err != nil {
		return nil, err
	}
	if t.state != nil {
		res.ResourceVersion = store.FormatVersion(t.state.rv)
	}
	return res, nil
}

// ResourceCreate stores a new resource and its ADDED change in one
// statement; an existing name inserts nothing and leaves the transaction
// usable.
func (t *writeTx) ResourceCreate(ctx context.Context, obj *resource.Object) (*resource.Object, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	rv := st.rv + 1
	out, err := store.PrepareCreate(obj, rv, t.s.now())
	if err != nil {
		return nil, err
	}
	b, err := store.EncodeObject(out)
	if err != nil {
		return nil, err
	}
	tag, err := t.q.Exec(ctx, `WITH ins AS (
			INSERT INTO resources (tenant_id, kind, namespace, name, uid, rv, labels, object)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING 1)
		INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
		SELECT $1, $6, $9, $2, $3, $4, $8 FROM ins`,
		t.tenant, out.Kind, out.Metadata.Namespace, out.Metadata.Name, out.Metadata.UID, rv,
		store.EncodeLabels(out.Metadata.Labels), b, store.ChangeAdded)
	if err != nil {
		return nil, interpretError(fmt.Errorf("create %s: %w", out.Key(), err))
	}
	if tag.RowsAffected() == 0 {
		return nil, fmt.Errorf("create %s: %w", out.Key(), store.ErrAlreadyExists)
	}
	st.rv, t.dirty = rv, true
	t.wrote(out.Kind)
	return out, nil
}

// ResourceUpdate replaces spec, labels and annotations of a resource.
func (t *writeTx) ResourceUpdate(ctx context.Context, obj *resource.Object) (*resource.Object, error) {
	if obj == nil {
		return nil, fmt.Errorf("update: nil object")
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := t.ResourceGet(ctx, obj.Key())
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	out, changed, err := store.PrepareUpdate(stored, obj)
	if err != nil || !changed {
		return out, err
	}
	return t.write(ctx, st, out)
}

// ResourceUpdateStatus replaces the status subresource.
func (t *writeTx) ResourceUpdateStatus(ctx context.Context, key resource.Key, status map[string]any, resourceVersion string) (*resource.Object, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := t.ResourceGet(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("update status: %w", err)
	}
	out, changed, err := store.PrepareUpdateStatus(stored, status, resourceVersion)
	if err != nil || !changed {
		return out, err
	}
	return t.write(ctx, st, out)
}

func (t *writeTx) write(ctx context.Context, st *tenantState, out *resource.Object) (*resource.Object, error) {
	rv := st.rv + 1
	out.Metadata.ResourceVersion = store.FormatVersion(rv)
	b, err := store.EncodeObject(out)
	if err != nil {
		return nil, err
	}
	tag, err := t.q.Exec(ctx, `WITH up AS (
			UPDATE resources SET rv = $5, labels = $6, object = $7
			WHERE tenant_id = $1 AND kind = $2 AND namespace = $3 AND name = $4 RETURNING 1)
		INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
		SELECT $1, $5, $8, $2, $3, $4, $7 FROM up`,
		t.tenant, out.Kind, out.Metadata.Namespace, out.Metadata.Name, rv,
		store.EncodeLabels(out.Metadata.Labels), b, store.ChangeModified)
	if err != nil {
		return nil, interpretError(fmt.Errorf("update %s: %w", out.Key(), err))
	}
	if tag.RowsAffected() == 0 {
		return nil, fmt.Errorf("update %s: %w", out.Key(), store.ErrNotFound)
	}
	st.rv, t.dirty = rv, true
	t.wrote(out.Kind)
	return out, nil
}

// ResourceDelete removes a resource and records its last state.
func (t *writeTx) ResourceDelete(ctx context.Context, key resource.Key, resourceVersion string) (*resource.Object, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := t.ResourceGet(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	rv := st.rv + 1
	out, err := store.PrepareDelete(stored, resourceVersion, rv)
	if err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	b, err := store.EncodeObject(out)
	if err != nil {
		return nil, err
	}
	tag, err := t.q.Exec(ctx, `WITH del AS (
			DELETE FROM resources WHERE tenant_id = $1 AND kind = $2 AND namespace = $3 AND name = $4 RETURNING 1)
		INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
		SELECT $1, $5, $6, $2, $3, $4, $7 FROM del`,
		t.tenant, key.Kind, key.Namespace, key.Name, rv, store.ChangeDeleted, b)
	if err != nil {
		return nil, interpretError(fmt.Errorf("delete %s: %w", key, err))
	}
	if tag.RowsAffected() == 0 {
		return nil, fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	st.rv, t.dirty = rv, true
	t.wrote(key.Kind)
	return out, nil
}

// EventInsert appends an event, assigning its per-tenant sequence.
func (t *writeTx) EventInsert(ctx context.Context, ev events.Event) (events.Event, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return ev, err
	}
	ev.Seq = st.eventSeq + 1
	ev.Tenant = t.tenant
	if ev.Time.IsZero() {
		ev.Time = t.s.now()
	}
	ev.Time = ev.Time.UTC().Truncate(time.Microsecond)
	var data []byte
	if len(ev.Data) > 0 {
		if data, err = resource.MarshalValue(ev.Data); err != nil {
			return ev, fmt.Errorf("insert event %s: encode data: %w", ev.Type, err)
		}
	}
	// Events are written in one statement when the transaction commits
	// (flushEvents): a tool call appends several, and each would otherwise
	// cost a round trip while the tenant's lock is held.
	pe := pendingEvent{seq: ev.Seq, typ: ev.Type, time: ev.Time, namespace: ev.Namespace, subject: ev.Subject}
	if data != nil {
		d := string(data)
		pe.data = &d
	}
	t.events = append(t.events, pe)
	st.eventSeq, t.dirty = ev.Seq, true
	return ev, nil
}

// pendingEvent is an event appended by the transaction and not yet written.
type pendingEvent struct {
	seq                     int64
	typ, namespace, subject string
	time                    time.Time
	data                    *string
}

// flushEvents writes the pending events in one statement.
func (t *writeTx) flushEvents(ctx context.Context) error {
	if len(t.events) == 0 {
		return nil
	}
	n := len(t.events)
	seqs, types, times, nss, subjects, datas := make([]int64, n), make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]*string, n)
	for i, e := range t.events {
		seqs[i], types[i], times[i], nss[i], subjects[i], datas[i] = e.seq, e.typ, e.time, e.namespace, e.subject, e.data
	}
	if _, err := t.q.Exec(ctx, `INSERT INTO events (tenant_id, seq, type, time, namespace, subject, data)
		SELECT $1, e.seq, e.type, e.time, e.namespace, e.subject, e.data::jsonb
		FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[]) AS e(seq, type, time, namespace, subject, data)`,
		t.tenant, seqs, types, times, nss, subjects, datas); err != nil {
		return interpretError(fmt.Errorf("insert %d events: %w", n, err))
	}
	t.events = t.events[:0]
	return nil
}

// EventList sees this transaction's own events.
func (t *writeTx) EventList(ctx context.Context, after int64, limit int) ([]events.Event, error) {
	if err := t.flushEvents(ctx); err != nil {
		return nil, err
	}
	return t.readTx.EventList(ctx, after, limit)
}

// AuditInsert appends a record to the tenant's hash chain. The tenant row
// lock serializes appenders, so the chain is gapless.
func (t *writeTx) AuditInsert(ctx context.Context, rec audit.Record) (audit.Record, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return rec, err
	}
	rec.Tenant = t.tenant
	rec.Seq = st.auditSeq + 1
	rec.PrevHash = st.auditHash
	if rec.Time.IsZero() {
		rec.Time = t.s.now()
	}
	rec.Time = rec.Time.UTC().Truncate(time.Microsecond)
	rec.Hash = audit.ComputeHash(rec)
	if _, err := t.q.Exec(ctx, `INSERT INTO audit_log (tenant_id, seq, time, actor, verb, namespace, resource,
		outcome, policy, reason, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		t.tenant, rec.Seq, rec.Time, rec.Actor, rec.Verb, rec.Namespace, rec.Resource, rec.Outcome,
		rec.Policy, rec.Reason, rec.PrevHash, rec.Hash); err != nil {
		return rec, interpretError(fmt.Errorf("insert audit record: %w", err))
	}
	st.auditSeq, st.auditHash, t.dirty = rec.Seq, rec.Hash, true
	return rec, nil
}

// APIKeyInsert stores an API key of the transaction's tenant. A duplicate
// secret hash is ErrAlreadyExists without aborting the transaction.
func (t *writeTx) APIKeyInsert(ctx context.Context, key store.APIKey) error {
	if key.SecretHash == "" {
		return fmt.Errorf("insert api key: secret hash is required")
	}
	if key.Tenant != "" && key.Tenant != t.tenant {
		return fmt.Errorf("insert api key: key names tenant %q inside tenant %q", key.Tenant, t.tenant)
	}
	if key.ID == "" {
		key.ID = store.NewUID()
	}
	if key.CreatedAt.IsZero() {
		key.CreatedAt = t.s.now()
	}
	// The tenant's counter-row lock serializes key inserts, so two
	// concurrent inserts of one name cannot both pass the check below.
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	if key.Name != "" {
		var n int
		if err := t.q.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND name = $2`, t.tenant, key.Name).Scan(&n); err != nil {
			return fmt.Errorf("insert api key %s: check name: %w", key.ID, err)
		}
		if n > 0 {
			return fmt.Errorf("insert api key: name %q is taken: %w", key.Name, store.ErrAlreadyExists)
		}
	}
	tag, err := t.q.Exec(ctx, `INSERT INTO api_keys (id, tenant_id, name, secret_hash, namespace, role, agent,
		created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
		key.ID, t.tenant, key.Name, key.SecretHash, key.Namespace, key.Role, key.Agent,
		key.CreatedAt, key.ExpiresAt, key.RevokedAt)
	if err != nil {
		return interpretError(fmt.Errorf("insert api key %s: %w", key.ID, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("insert api key %s: %w", key.ID, store.ErrAlreadyExists)
	}
	return nil
}

// compact moves the tenant's retained floor toward target, or, when target
// is negative, toward keep versions behind the newest (the target it
// returns), by at most store.CompactChunk entries. It reports whether the
// floor reached the target.
func (t *writeTx) compact(ctx context.Context, keep int, target int64) (int64, bool, error) {
	st, err := t.lockState(ctx)
	if err != nil {
		return target, false, err
	}
	if target < 0 {
		target = st.rv - int64(keep)
	}
	if target <= st.floor {
		return target, true, nil
	}
	floor := min(target, st.floor+store.CompactChunk)
	if _, err := t.q.Exec(ctx, `DELETE FROM changes WHERE tenant_id = $1 AND rv > $2 AND rv <= $3`, t.tenant, st.floor, floor); err != nil {
		return target, false, fmt.Errorf("compact changes: %w", err)
	}
	st.floor, t.dirty = floor, true
	return target, floor == target, nil
}
