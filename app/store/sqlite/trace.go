package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// traceSQL writes SQLite's parameters.
var traceSQL = store.TraceSQL{Placeholder: func(int) string { return "?" }, Zero: "0"}

// Rows of one multi-row INSERT: fewer statements are most of the cost
// saved, and the parameters stay far below SQLite's limit.
const (
	blockInsertRows = 64
	keyInsertRows   = 128
)

// multiInsert returns an INSERT of n rows of cols columns.
func multiInsert(table, cols string, ncols, n int) string {
	row := "(?" + strings.Repeat(", ?", ncols-1) + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + cols + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

const (
	blockCols = "id, tenant_id, namespace, trace_id, min_start, max_start, spans, data"
	keyCols   = "tenant_id, block_id, kind, value, max_start"
)

var (
	qBlockInsertFull = multiInsert("span_blocks", blockCols, 8, blockInsertRows)
	qKeyInsertFull   = multiInsert("span_keys", keyCols, 5, keyInsertRows)
)

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
	if err := s.writeSpans(ctx, tx, tenant, b); err != nil {
		return fmt.Errorf("sqlite: span write: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit span write: %w", err)
	}
	s.commits.Add(1)
	return nil
}

func (s *Store) writeSpans(ctx context.Context, tx *sql.Tx, tenant string, b *store.SpanBatch) error {
	blocks := b.Blocks
	if len(b.Spans) > 0 {
		blocks = append(s.spans.EncodeBlocks(b.Spans), blocks...)
	}
	if len(blocks) > 0 {
		if err := s.writeBlocks(ctx, tx, tenant, blocks); err != nil {
			return err
		}
	}
	var lastSeen int64
	for i := range blocks {
		lastSeen = max(lastSeen, blocks[i].MaxStart)
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

// writeBlocks inserts blocks and their keys. The ids follow the largest
// stored one: the writer connection is the only one that inserts.
func (s *Store) writeBlocks(ctx context.Context, tx *sql.Tx, tenant string, blocks []store.EncodedBlock) error {
	// The full INSERTs were prepared at Open: parsing one costs more than
	// running it.
	fullBlocks, fullKeys := tx.StmtContext(ctx, s.stmts[qBlockInsertFull]), tx.StmtContext(ctx, s.stmts[qKeyInsertFull])
	defer fullBlocks.Close()
	defer fullKeys.Close()
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM span_blocks`).Scan(&last); err != nil {
		return fmt.Errorf("read the last span block id: %w", err)
	}
	args := make([]any, 0, blockInsertRows*8)
	for start := 0; start < len(blocks); start += blockInsertRows {
		part := blocks[start:min(start+blockInsertRows, len(blocks))]
		args = args[:0]
		for i := range part {
			bl := &part[i]
			args = append(args, last+int64(start+i)+1, tenant, bl.Namespace, bl.TraceID[:], bl.MinStart, bl.MaxStart, bl.Spans, bl.Data)
		}
		if err := execRows(ctx, tx, fullBlocks, "span_blocks", blockCols, 8, len(part), blockInsertRows, args); err != nil {
			return fmt.Errorf("insert span blocks: %w", err)
		}
	}
	args = make([]any, 0, keyInsertRows*5)
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		err := execRows(ctx, tx, fullKeys, "span_keys", keyCols, 5, n, keyInsertRows, args)
		args, n = args[:0], 0
		if err != nil {
			return fmt.Errorf("insert span keys: %w", err)
		}
		return nil
	}
	// The keys go in in their b-tree's order, (kind, value, newest start,
	// block): the inserts of one value follow one another on the same
	// pages.
	type blockKey struct {
		store.SpanKey
		block int
	}
	keys := make([]blockKey, 0, len(blocks)*8)
	for i := range blocks {
		for _, k := range blocks[i].Keys {
			keys = append(keys, blockKey{k, i})
		}
	}
	slices.SortFunc(keys, func(a, b blockKey) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Value, b.Value), cmp.Compare(blocks[a.block].MaxStart, blocks[b.block].MaxStart),
			cmp.Compare(a.block, b.block))
	})
	for _, k := range keys {
		args = append(args, tenant, last+int64(k.block)+1, k.Kind, k.Value, blocks[k.block].MaxStart)
		if n++; n == keyInsertRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// execRows runs a multi-row INSERT of n rows: full, prepared, when n is
// the full count.
func execRows(ctx context.Context, tx *sql.Tx, full *sql.Stmt, table, cols string, ncols, n, fullRows int, args []any) error {
	if n == fullRows {
		_, err := full.ExecContext(ctx, args...)
		return err
	}
	_, err := tx.ExecContext(ctx, multiInsert(table, cols, ncols, n), args...)
	return err
}

// SpanList returns the spans matching f: those of blocks and those of
// the per-span table of earlier versions.
func (s *Store) SpanList(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, err
	}
	return s.spanList(ctx, s.reader, tenant, f)
}

// SpanListResources returns the spans matching f and their resources in
// one read transaction.
func (s *Store) SpanListResources(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, map[int64][]byte, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return nil, nil, err
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: begin span read: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	spans, err := s.spanList(ctx, tx, tenant, f)
	if err != nil {
		return nil, nil, err
	}
	res, err := spanResources(ctx, tx, tenant, store.SpanResourceIDs(spans))
	if err != nil {
		return nil, nil, err
	}
	return spans, res, nil
}

// spanList reads the spans matching f through q.
func (s *Store) spanList(ctx context.Context, q querier, tenant string, f store.SpanFilter) ([]store.Span, error) {
	rows, err := spanRows(ctx, q, tenant, f)
	if err != nil {
		return nil, err
	}
	blocks, err := store.ListBlockSpans(s.spans, f, func(cur *store.BlockCursor, n int) ([]store.StoredBlock, error) {
		return blockPage(ctx, q, tenant, f, cur, n)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list spans: %w", err)
	}
	return store.MergeSpans(f, rows, blocks), nil
}

// blockPage reads one page of blocks (store.BlockPage).
func blockPage(ctx context.Context, db querier, tenant string, f store.SpanFilter, cur *store.BlockCursor, n int) ([]store.StoredBlock, error) {
	q, args := traceSQL.SpanBlockList(tenant, f, cur, n)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list span blocks: %w", err)
	}
	defer rows.Close()
	out, err := store.ScanBlocks(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

// spanRows returns the spans matching f of the per-span table.
func spanRows(ctx context.Context, db querier, tenant string, f store.SpanFilter) ([]store.Span, error) {
	q, args := traceSQL.SpanList(tenant, f)
	rows, err := db.QueryContext(ctx, q, args...)
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
	return spanResources(ctx, s.reader, tenant, ids)
}

// spanResources reads the resources with the given ids through db.
func spanResources(ctx context.Context, db querier, tenant string, ids []int64) (map[int64][]byte, error) {
	out := map[int64][]byte{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{tenant}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, data FROM span_resources WHERE tenant_id = ? AND id IN (?`+
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: get span resources: %w", err)
	}
	return out, nil
}

// TraceSummaryList summarizes the given traces.
func (s *Store) TraceSummaryList(ctx context.Context, tenant string, namespaces []string, ids [][16]byte) ([]store.TraceSummary, error) {
	if len(ids) == 0 {
		return nil, store.CheckTenant(tenant)
	}
	spans, err := s.SpanList(ctx, tenant, store.SpanFilter{Namespaces: namespaces, TraceIDs: ids, Status: -1, Ascending: true})
	if err != nil {
		return nil, err
	}
	return store.SummarizeTraces(spans), nil
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
// its cut-off, oldest first, in one transaction.
func (s *Store) SpanExpire(ctx context.Context, tenant string, cut store.TraceCutoffs, limit int) (int, error) {
	if err := store.CheckTenant(tenant); err != nil {
		return 0, err
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: begin span expiry: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	const dueBlocks = `SELECT id FROM span_blocks WHERE tenant_id = ? AND max_start < ? ORDER BY max_start, id LIMIT ?`
	if !cut.Spans.IsZero() {
		// The keys first, of the blocks the statements below delete.
		if err := s.expireKeys(ctx, tx, tenant, cut.Spans.UnixNano(), limit); err != nil {
			return 0, err
		}
	}
	total := 0
	for _, q := range []struct {
		sql  string
		args []any
		// cut is the statement's cut-off; zero skips it.
		cut time.Time
	}{
		{`DELETE FROM span_blocks WHERE id IN (` + dueBlocks + `)`, []any{tenant, cut.Spans.UnixNano(), limit}, cut.Spans},
		{`DELETE FROM spans WHERE rowid IN (SELECT rowid FROM spans WHERE tenant_id = ? AND start_ns < ? ORDER BY start_ns LIMIT ?)`,
			[]any{tenant, cut.Spans.UnixNano(), limit}, cut.Spans},
		{`DELETE FROM span_resources WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM span_resources WHERE tenant_id = ? AND last_seen < ? LIMIT ?)`,
			[]any{tenant, cut.Spans.UnixNano(), limit}, cut.Spans},
		{`DELETE FROM span_rollups WHERE (tenant_id, width, minute, namespace, agent, tool, model) IN (SELECT tenant_id, width, minute, namespace, agent, tool, model
			FROM span_rollups WHERE tenant_id = ? AND minute < ? ORDER BY minute LIMIT ?)`, []any{tenant, cut.Metrics.Unix() / 60 * 60, limit}, cut.Metrics},
		{`DELETE FROM ocsf_events WHERE id IN (SELECT id FROM ocsf_events WHERE tenant_id = ? AND time_ms < ? ORDER BY time_ms LIMIT ?)`,
			[]any{tenant, cut.OCSFEvents.UnixMilli(), limit}, cut.OCSFEvents},
	} {
		if q.cut.IsZero() {
			continue
		}
		res, err := tx.ExecContext(ctx, q.sql, q.args...)
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

// expireKeys deletes the keys of the blocks SpanExpire deletes (the
// oldest limit before cut): span_keys has no index by block, so the keys
// of a block are found from its spans and deleted by their primary key.
// A block that does not decode has its keys looked for by block id.
func (s *Store) expireKeys(ctx context.Context, tx *sql.Tx, tenant string, cut int64, limit int) error {
	rows, err := tx.QueryContext(ctx, `SELECT b.id, b.namespace, b.trace_id, b.min_start, b.max_start, b.data FROM span_blocks b
		WHERE b.tenant_id = ? AND b.max_start < ? ORDER BY b.max_start, b.id LIMIT ?`, tenant, cut, limit)
	if err != nil {
		return fmt.Errorf("sqlite: read expired span blocks: %w", err)
	}
	blocks, err := store.ScanBlocks(rows)
	_ = rows.Close()
	if err != nil {
		return fmt.Errorf("sqlite: read expired span blocks: %w", err)
	}
	del, err := tx.PrepareContext(ctx, `DELETE FROM span_keys WHERE tenant_id = ? AND kind = ? AND value = ? AND max_start = ? AND block_id = ?`)
	if err != nil {
		return fmt.Errorf("sqlite: expire span keys: %w", err)
	}
	defer del.Close()
	for _, b := range blocks {
		spans, err := s.spans.Decode(b.Data, b.Namespace, b.TraceID)
		if err != nil {
			if _, err := tx.ExecContext(ctx, `DELETE FROM span_keys WHERE tenant_id = ? AND block_id = ?`, tenant, b.ID); err != nil {
				return fmt.Errorf("sqlite: expire the span keys of block %d: %w", b.ID, err)
			}
			continue
		}
		for _, k := range store.BlockKeys(spans) {
			if _, err := del.ExecContext(ctx, tenant, k.Kind, k.Value, b.MaxStart, b.ID); err != nil {
				return fmt.Errorf("sqlite: expire span keys: %w", err)
			}
		}
	}
	return nil
}
