package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Hot statements, prepared once on the writer connection (see stmtQuerier).
const (
	qGetObject      = `SELECT object FROM resources WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ?`
	qInsertChange   = `INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qInsertResource = `INSERT INTO resources (tenant_id, kind, namespace, name, uid, rv, labels, object) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	qUpdateResource = `UPDATE resources SET rv = ?, labels = ?, object = ? WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ?`
	qDeleteResource = `DELETE FROM resources WHERE tenant_id = ? AND kind = ? AND namespace = ? AND name = ?`
	qInsertEvent    = `INSERT INTO events (tenant_id, seq, type, time, namespace, subject, data) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qInsertAudit    = `INSERT INTO audit_log (tenant_id, seq, time, actor, verb, namespace, resource, outcome, policy, reason, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qEnsureState    = `INSERT INTO tenant_state (tenant_id) VALUES (?) ON CONFLICT (tenant_id) DO NOTHING`
	qGetState       = `SELECT rv, floor, event_seq, audit_seq, audit_hash FROM tenant_state WHERE tenant_id = ?`
	qSaveState      = `UPDATE tenant_state SET rv = ?, floor = ?, event_seq = ?, audit_seq = ?, audit_hash = ? WHERE tenant_id = ?`
)

// preparedQueries lists the statements Open prepares on the writer.
func preparedQueries() []string {
	return append([]string{qGetObject, qInsertChange, qInsertResource, qUpdateResource, qDeleteResource, qInsertEvent, qInsertAudit,
		qEnsureState, qGetState, qSaveState,
		qIdempotencyClaim, qIdempotencyHolder, qIdempotencyRelease, qUsageCharge, qUsageTakeBack, qUsageGet, qUpdateResourceAt,
		qInsertRouteDecision, qBlockInsertFull, qKeyInsertFull}, routerQueries()...)
}

// querier is what *sql.Tx and stmtQuerier offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtQuerier runs the statements prepared at Open through the write
// transaction (re-using their compiled form: SQLite parsing is a large part
// of a small write) and everything else directly. Read transactions use it
// too, with the statements prepared on the reader pool.
type stmtQuerier struct {
	tx    *sql.Tx
	base  map[string]*sql.Stmt
	local map[string]*sql.Stmt
}

func (q *stmtQuerier) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := q.local[query]; ok {
		return st
	}
	base, ok := q.base[query]
	if !ok {
		return nil
	}
	st := q.tx.StmtContext(ctx, base)
	if q.local == nil {
		q.local = map[string]*sql.Stmt{}
	}
	q.local[query] = st
	return st
}

func (q *stmtQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.tx.ExecContext(ctx, query, args...)
}

func (q *stmtQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.tx.QueryContext(ctx, query, args...)
}

func (q *stmtQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.tx.QueryRowContext(ctx, query, args...)
}

// readTx implements store.Reader inside one SQL transaction. Every query
// names tenant_id explicitly; SQLite has no row-level security.
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
	err := t.q.QueryRowContext(ctx, qGetObject,
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
		q := `SELECT object FROM resources WHERE tenant_id = ? AND kind = ?`
		args := []any{t.tenant, p.Kind}
		if p.Namespace != "" {
			q += ` AND namespace = ?`
			args = append(args, p.Namespace)
		}
		if after != nil {
			q += ` AND (namespace, name) > (?, ?)`
			args = append(args, after.Namespace, after.Name)
		}
		q += ` ORDER BY namespace, name LIMIT ?`
		args = append(args, n)
		return t.scanObjects(ctx, q, args...)
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Kind, err)
	}
	return &store.ListResult{Items: items, Continue: cont, ResourceVersion: store.FormatVersion(rv)}, nil
}

func (t *readTx) scanObjects(ctx context.Context, q string, args ...any) ([]*resource.Object, error) {
	rows, err := t.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []*resource.Object
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		o, err := store.DecodeObject(b)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// EventList returns persisted events after the given sequence.
func (t *readTx) EventList(ctx context.Context, after int64, limit int) ([]events.Event, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT seq, type, time, namespace, subject, data FROM events
		WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?`, t.tenant, after, store.PageLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []events.Event
	for rows.Next() {
		ev := events.Event{Tenant: t.tenant}
		var micros int64
		var data []byte
		if err := rows.Scan(&ev.Seq, &ev.Type, &micros, &ev.Namespace, &ev.Subject, &data); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		ev.Time = time.UnixMicro(micros).UTC()
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
		FROM audit_log WHERE tenant_id = ? AND seq > ?`
	args := []any{t.tenant, p.After}
	if p.Actor != "" {
		q += ` AND actor = ?`
		args = append(args, p.Actor)
	}
	if p.Namespace != "" {
		q += ` AND namespace = ?`
		args = append(args, p.Namespace)
	}
	if p.Verb != "" {
		q += ` AND verb = ?`
		args = append(args, p.Verb)
	}
	if !p.Since.IsZero() {
		q += ` AND time >= ?`
		args = append(args, p.Since.UnixMicro())
	}
	if p.Before > 0 {
		q += ` AND seq < ?`
		args = append(args, p.Before)
	}
	if p.NewestFirst {
		q += ` ORDER BY seq DESC LIMIT ?`
	} else {
		q += ` ORDER BY seq LIMIT ?`
	}
	args = append(args, store.PageLimit(p.Limit))
	rows, err := t.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []audit.Record
	for rows.Next() {
		r := audit.Record{Tenant: t.tenant}
		var micros int64
		if err := rows.Scan(&r.Seq, &micros, &r.Actor, &r.Verb, &r.Namespace, &r.Resource, &r.Outcome,
			&r.Policy, &r.Reason, &r.PrevHash, &r.Hash); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		r.Time = time.UnixMicro(micros).UTC()
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
	err := t.q.QueryRowContext(ctx, `SELECT rv FROM tenant_state WHERE tenant_id = ?`, t.tenant).Scan(&rv)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("current version: %w", err)
	}
	return rv, nil
}

func (t *readTx) changesSince(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	var floor int64
	err := t.q.QueryRowContext(ctx, `SELECT floor FROM tenant_state WHERE tenant_id = ?`, t.tenant).Scan(&floor)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("changes since %d: %w", after, err)
	}
	if after < floor {
		return nil, fmt.Errorf("changes since %d (retained from %d): %w", after, floor, store.ErrGone)
	}
	if limit <= 0 {
		limit = store.MaxPageSize
	}
	rows, err := t.q.QueryContext(ctx, `SELECT rv, type, object FROM changes
		WHERE tenant_id = ? AND rv > ? ORDER BY rv LIMIT ?`, t.tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("changes since %d: %w", after, err)
	}
	defer func() { _ = rows.Close() }()
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

// tenantState mirrors the tenant_state row while a write transaction holds
// it; flush writes it back before commit.
type tenantState struct {
	rv, floor, eventSeq, auditSeq int64
	auditHash                     string
}

// writeTx implements store.Tx on the writer connection.
type writeTx struct {
	readTx
	state *tenantState
	dirty bool
	// changed is set when the transaction appended to the change log,
	// config when one of those changes is of a configuration kind.
	changed, config bool
}

// lockState loads the tenant's counters, creating the row on first use. The
// writer connection already serializes all writes, so no row lock is needed.
func (t *writeTx) lockState(ctx context.Context) (*tenantState, error) {
	if t.state != nil {
		return t.state, nil
	}
	// The transaction holds the database's write lock (BEGIN IMMEDIATE),
	// so the row read here stays as read; only a tenant's first write
	// creates it.
	st := &tenantState{}
	get := func() error {
		return t.q.QueryRowContext(ctx, qGetState, t.tenant).Scan(&st.rv, &st.floor, &st.eventSeq, &st.auditSeq, &st.auditHash)
	}
	err := get()
	if errors.Is(err, sql.ErrNoRows) {
		if _, err = t.q.ExecContext(ctx, qEnsureState, t.tenant); err == nil {
			err = get()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock tenant state: %w", err)
	}
	t.state = st
	return st, nil
}

func (t *writeTx) flush(ctx context.Context) error {
	if !t.dirty {
		return nil
	}
	st := t.state
	if _, err := t.q.ExecContext(ctx, qSaveState, st.rv, st.floor, st.eventSeq, st.auditSeq, st.auditHash, t.tenant); err != nil {
		return fmt.Errorf("save tenant state: %w", err)
	}
	return nil
}

// AuditHead returns the tenant's newest audit sequence number from its
// counter row (0 when none).
func (t *readTx) AuditHead(ctx context.Context) (int64, error) {
	var seq int64
	err := t.q.QueryRowContext(ctx, `SELECT audit_seq FROM tenant_state WHERE tenant_id = ?`, t.tenant).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
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

func (t *writeTx) appendChange(ctx context.Context, typ string, rv int64, o *resource.Object, b []byte) error {
	if _, err := t.q.ExecContext(ctx, qInsertChange, t.tenant, rv, typ, o.Kind, o.Metadata.Namespace, o.Metadata.Name, b); err != nil {
		return fmt.Errorf("append %s change of %s: %w", typ, o.Key(), err)
	}
	t.changed = true
	if !resource.IsRecordKind(o.Kind) {
		t.config = true
	}
	return nil
}

// ResourceCreate stores a new resource.
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
	if err := t.insertResource(ctx, st, out, store.EncodeLabels(out.Metadata.Labels), b, rv); err != nil {
		return nil, err
	}
	return out, nil
}

// insertResource stores out, encoded as b, at version rv (the next one)
// with its ADDED change.
func (t *writeTx) insertResource(ctx context.Context, st *tenantState, out *resource.Object, labels, b []byte, rv int64) error {
	res, err := t.q.ExecContext(ctx, qInsertResource,
		t.tenant, out.Kind, out.Metadata.Namespace, out.Metadata.Name, out.Metadata.UID, rv, labels, b)
	if err != nil {
		return fmt.Errorf("create %s: %w", out.Key(), err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("create %s: %w", out.Key(), store.ErrAlreadyExists)
	}
	if err := t.appendChange(ctx, store.ChangeAdded, rv, out, b); err != nil {
		return err
	}
	st.rv, t.dirty = rv, true
	return nil
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
	if _, err := t.q.ExecContext(ctx, qUpdateResource,
		rv, store.EncodeLabels(out.Metadata.Labels), b, t.tenant, out.Kind, out.Metadata.Namespace, out.Metadata.Name); err != nil {
		return nil, fmt.Errorf("update %s: %w", out.Key(), err)
	}
	if err := t.appendChange(ctx, store.ChangeModified, rv, out, b); err != nil {
		return nil, err
	}
	st.rv, t.dirty = rv, true
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
	if _, err := t.q.ExecContext(ctx, qDeleteResource,
		t.tenant, key.Kind, key.Namespace, key.Name); err != nil {
		return nil, fmt.Errorf("delete %s: %w", key, err)
	}
	if err := t.appendChange(ctx, store.ChangeDeleted, rv, out, b); err != nil {
		return nil, err
	}
	st.rv, t.dirty = rv, true
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
	return ev, t.insertEvent(ctx, st, ev, data)
}

// insertEvent stores ev, its sequence (the next one), tenant and stored
// time set, with its data encoded.
func (t *writeTx) insertEvent(ctx context.Context, st *tenantState, ev events.Event, data []byte) error {
	if _, err := t.q.ExecContext(ctx, qInsertEvent, t.tenant, ev.Seq, ev.Type, ev.Time.UnixMicro(), ev.Namespace, ev.Subject, data); err != nil {
		return fmt.Errorf("insert event %s: %w", ev.Type, err)
	}
	st.eventSeq, t.dirty = ev.Seq, true
	return nil
}

// AuditInsert appends a record to the tenant's hash chain.
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
	if _, err := t.q.ExecContext(ctx, qInsertAudit,
		t.tenant, rec.Seq, rec.Time.UnixMicro(), rec.Actor, rec.Verb, rec.Namespace, rec.Resource, rec.Outcome,
		rec.Policy, rec.Reason, rec.PrevHash, rec.Hash); err != nil {
		return rec, fmt.Errorf("insert audit record: %w", err)
	}
	st.auditSeq, st.auditHash, t.dirty = rec.Seq, rec.Hash, true
	return rec, nil
}

// APIKeyInsert stores an API key of the transaction's tenant.
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
	if key.Name != "" {
		var n int
		if err := t.q.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE tenant_id = ? AND name = ?`, t.tenant, key.Name).Scan(&n); err != nil {
			return fmt.Errorf("insert api key %s: check name: %w", key.ID, err)
		}
		if n > 0 {
			return fmt.Errorf("insert api key: name %q is taken: %w", key.Name, store.ErrAlreadyExists)
		}
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO api_keys (id, tenant_id, name, secret_hash, namespace, role, agent,
		created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		key.ID, t.tenant, key.Name, key.SecretHash, key.Namespace, key.Role, key.Agent,
		key.CreatedAt.UnixMicro(), timePtrMicro(key.ExpiresAt), timePtrMicro(key.RevokedAt)); err != nil {
		return interpretError(fmt.Errorf("insert api key %s: %w", key.ID, err))
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
	if _, err := t.q.ExecContext(ctx, `DELETE FROM changes WHERE tenant_id = ? AND rv > ? AND rv <= ?`, t.tenant, st.floor, floor); err != nil {
		return target, false, fmt.Errorf("compact changes: %w", err)
	}
	st.floor, t.dirty = floor, true
	return target, floor == target, nil
}
