package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// traceSQL writes SQLite's parameters.
var traceSQL = store.TraceSQL{Placeholder: func(int) string { return "?" }, Zero: "0"}

// spanInsertRows is how many spans one INSERT statement carries: fewer
// statements are most of the cost saved, and 64 × 18 parameters stay far
// below SQLite's limit.
const spanInsertRows = 64

// spanInsert returns the INSERT of n spans.
func spanInsert(n int) string {
	row := "(?" + strings.Repeat(", ?", store.SpanColumnCount) + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO spans (tenant_id, " + store.SpanColumns + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

var qSpanInsertFull = spanInsert(spanInsertRows)

const (
	qSpanResourceUpsert = `INSERT INTO span_resources (tenant_id, id, data, last_seen) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant_id, id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)`
	qOCSFInsert = `INSERT INTO ocsf_events (tenant_id, namespace, time_ms, class_uid, activity_id, severity_id, status_id, actor, operation, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

var qRollupUpsert = traceSQL.RollupUpsert()

// SpanWrite stores the batch in one transaction on the writer connection.
func (s *Store) SpanWrite(ctx context.Context, tenant string, b *store.SpanBatch) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin span write: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := writeSpans(ctx, tx, tenant, b); err != nil {
		return fmt.Errorf("sqlite: span write: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit span write: %w", err)
	}
	s.commits.Add(1)
	return nil
}

func writeSpans(ctx context.Context, tx *sql.Tx, tenant string, b *store.SpanBatch) error {
	args := make([]any, 0, spanInsertRows*(store.SpanColumnCount+1))
	var full *sql.Stmt
	spans := b.Spans
	for len(spans) > 0 {
		n := min(len(spans), spanInsertRows)
		args = args[:0]
		for i := range spans[:n] {
			args = appendSpanArgs(args, tenant, &spans[i])
		}
		var err error
		if n == spanInsertRows {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, qSpanInsertFull); err != nil {
					return err
				}
				defer full.Close()
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, spanInsert(n), args...)
		}
		if err != nil {
			return fmt.Errorf("insert spans: %w", err)
		}
		spans = spans[n:]
	}
	var lastSeen int64
	for i := range b.Spans {
		lastSeen = max(lastSeen, b.Spans[i].Start)
	}
	for _, r := range b.Resources {
		if _, err := tx.ExecContext(ctx, qSpanResourceUpsert, tenant, r.ID, r.Data, lastSeen); err != nil {
			return fmt.Errorf("insert span resource: %w", err)
		}
	}
	if len(b.Rollups) > 0 {
		// Prepared once: parsing the statement costs more than running it.
		up, err := tx.PrepareContext(ctx, qRollupUpsert)
		if err != nil {
			return fmt.Errorf("prepare rollup upsert: %w", err)
		}
		defer up.Close()
		for i := range b.Rollups {
			if _, err := up.ExecContext(ctx, store.RollupArgs(tenant, &b.Rollups[i])...); err != nil {
				return fmt.Errorf("add span rollup: %w", err)
			}
		}
	}
	for _, e := range b.Events {
		if _, err := tx.ExecContext(ctx, qOCSFInsert, tenant, e.Namespace, e.Time, e.ClassUID, e.ActivityID, e.SeverityID, e.StatusID,
			e.Actor, e.Operation, e.Data); err != nil {
			return fmt.Errorf("insert OCSF event: %w", err)
		}
	}
	return nil
}

func appendSpanArgs(args []any, tenant string, sp *store.Span) []any {
	var parent any
	if sp.ParentID != ([8]byte{}) {
		parent = sp.ParentID[:]
	}
	var cost, tokens any
	if sp.Cost != 0 {
		cost = sp.Cost
	}
	if sp.Tokens != 0 {
		tokens = sp.Tokens
	}
	return append(args, tenant, sp.Namespace, sp.TraceID[:], sp.SpanID[:], parent, sp.Name, sp.Kind, sp.Start, sp.End, sp.Status,
		store.NullString(sp.Service), store.NullString(sp.Agent), store.NullString(sp.Tool), store.NullString(sp.Model),
		store.NullString(sp.Execution), cost, tokens, sp.Resource, sp.Data)
}

// SpanList returns the spans matching f.
func (s *Store) SpanList(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	q, args := traceSQL.SpanList(tenant, f)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list spans: %w", err)
	}
	defer rows.Close()
	var out []store.Span
	for rows.Next() {
		var sp store.Span
		var traceID, spanID, parentID []byte
		var service, agent, tool, model, execution sql.NullString
		var cost sql.NullFloat64
		var tokens sql.NullInt64
		if err := rows.Scan(&sp.Namespace, &traceID, &spanID, &parentID, &sp.Name, &sp.Kind, &sp.Start, &sp.End, &sp.Status,
			&service, &agent, &tool, &model, &execution, &cost, &tokens, &sp.Resource, &sp.Data); err != nil {
			return nil, fmt.Errorf("sqlite: scan span: %w", err)
		}
		copy(sp.TraceID[:], traceID)
		copy(sp.SpanID[:], spanID)
		copy(sp.ParentID[:], parentID)
		sp.Service, sp.Agent, sp.Tool, sp.Model, sp.Execution = service.String, agent.String, tool.String, model.String, execution.String
		sp.Cost, sp.Tokens = cost.Float64, tokens.Int64
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list spans: %w", err)
	}
	return out, nil
}

// SpanResourceGet returns the resources with the given ids.
func (s *Store) SpanResourceGet(ctx context.Context, tenant string, ids []int64) (map[int64][]byte, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	out := map[int64][]byte{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{tenant}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT id, data FROM span_resources WHERE tenant_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get span resources: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("sqlite: scan span resource: %w", err)
		}
		out[id] = data
	}
	return out, rows.Err()
}

// TraceSummaryList summarizes the given traces.
func (s *Store) TraceSummaryList(ctx context.Context, tenant string, namespaces []string, ids [][16]byte) ([]store.TraceSummary, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	q, args := traceSQL.TraceSummaryList(tenant, namespaces, ids)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: summarize traces: %w", err)
	}
	defer rows.Close()
	var out []store.TraceSummary
	for rows.Next() {
		var t store.TraceSummary
		var id []byte
		var root, service string
		if err := rows.Scan(&id, &t.Spans, &t.Errors, &t.Start, &t.End, &root, &service); err != nil {
			return nil, fmt.Errorf("sqlite: scan trace summary: %w", err)
		}
		copy(t.TraceID[:], id)
		t.Root, t.Service = store.SplitRootName(root), store.SplitRootName(service)
		out = append(out, t)
	}
	return out, rows.Err()
}

// SpanRollupList returns the rollups matching f, summed per group.
func (s *Store) SpanRollupList(ctx context.Context, tenant string, f store.RollupFilter) ([]store.SpanRollup, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	q, args, err := traceSQL.SpanRollupList(tenant, f)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list span rollups: %w", err)
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list span rollups: %w", err)
	}
	defer rows.Close()
	var out []store.SpanRollup
	for rows.Next() {
		var r store.SpanRollup
		var calls, errs, tokens sql.NullInt64
		var lat, cost sql.NullFloat64
		var hist [store.SpanHistBuckets]sql.NullInt64
		targets := append(store.RollupGroupTargets(&r, f.GroupBy), &calls, &errs, &lat, &cost, &tokens)
		for i := range hist {
			targets = append(targets, &hist[i])
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, fmt.Errorf("sqlite: scan span rollup: %w", err)
		}
		if !calls.Valid {
			continue // the sums over no rows, without GROUP BY
		}
		r.Calls, r.Errors, r.LatencySum, r.Cost, r.Tokens = calls.Int64, errs.Int64, lat.Float64, cost.Float64, tokens.Int64
		for i := range hist {
			r.Hist[i] = hist[i].Int64
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// OCSFEventList returns OCSF events matching f, newest first.
func (s *Store) OCSFEventList(ctx context.Context, tenant string, f store.OCSFFilter) ([]store.StoredOCSFEvent, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	q, args := traceSQL.OCSFEventList(tenant, f)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list OCSF events: %w", err)
	}
	defer rows.Close()
	var out []store.StoredOCSFEvent
	for rows.Next() {
		var e store.StoredOCSFEvent
		if err := rows.Scan(&e.ID, &e.Namespace, &e.Time, &e.ClassUID, &e.ActivityID, &e.SeverityID, &e.StatusID, &e.Actor, &e.Operation, &e.Data); err != nil {
			return nil, fmt.Errorf("sqlite: scan OCSF event: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SpanExpire deletes at most limit rows of each trace table older than
// before, oldest first, in one transaction.
func (s *Store) SpanExpire(ctx context.Context, tenant string, before time.Time, limit int) (int, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return 0, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: begin span expiry: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	ns := before.UnixNano()
	total := 0
	for _, q := range []struct {
		sql string
		arg any
	}{
		{`DELETE FROM spans WHERE rowid IN (SELECT rowid FROM spans WHERE tenant_id = ? AND start_ns < ? ORDER BY start_ns LIMIT ?)`, ns},
		{`DELETE FROM span_rollups WHERE (tenant_id, width, minute, namespace, agent, tool, model) IN (SELECT tenant_id, width, minute, namespace, agent, tool, model
			FROM span_rollups WHERE tenant_id = ? AND minute < ? ORDER BY minute LIMIT ?)`, before.Unix() / 60 * 60},
		{`DELETE FROM span_resources WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM span_resources WHERE tenant_id = ? AND last_seen < ? LIMIT ?)`, ns},
		{`DELETE FROM ocsf_events WHERE id IN (SELECT id FROM ocsf_events WHERE tenant_id = ? AND time_ms < ? ORDER BY time_ms LIMIT ?)`, before.UnixMilli()},
	} {
		res, err := tx.ExecContext(ctx, q.sql, tenant, q.arg, limit)
		if err != nil {
			return 0, fmt.Errorf("sqlite: expire spans: %w", err)
		}
		n, _ := res.RowsAffected()
		total = max(total, int(n))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: commit span expiry: %w", err)
	}
	s.commits.Add(1)
	return total, nil
}
