package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/store"
)

// traceSQL writes Postgres's parameters.
var traceSQL = store.TraceSQL{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }, Zero: "0::float8"}

// qBlockInsert inserts a batch's blocks and their keys in one statement
// over arrays, one per column (COPY is refused on tables under row-level
// security). The ids are drawn first, so that the keys can name their
// block by its position in the arrays.
const qBlockInsert = `WITH ids AS MATERIALIZED (
		SELECT ord, nextval('span_blocks_id_seq') AS id FROM generate_series(1::bigint, cardinality($2::text[])) AS ord),
	blocks AS (
		INSERT INTO span_blocks (id, tenant_id, namespace, trace_id, min_start, max_start, spans, data)
		SELECT ids.id, $1, u.namespace, u.trace_id, u.min_start, u.max_start, u.spans, u.data
		FROM unnest($2::text[], $3::bytea[], $4::bigint[], $5::bigint[], $6::integer[], $7::bytea[])
			WITH ORDINALITY AS u(namespace, trace_id, min_start, max_start, spans, data, ord)
		JOIN ids USING (ord))
	INSERT INTO span_keys (tenant_id, block_id, kind, value, max_start)
	SELECT $1, ids.id, k.kind, k.value, k.max_start
	FROM unnest($8::bigint[], $9::smallint[], $10::text[], $11::bigint[]) AS k(ord, kind, value, max_start)
	JOIN ids USING (ord)`

const (
	qSpanResourceUpsert = `INSERT INTO span_resources (tenant_id, id, data, last_seen) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, id) DO UPDATE SET last_seen = greatest(span_resources.last_seen, excluded.last_seen)`
	qOCSFInsert = `INSERT INTO ocsf_events (tenant_id, namespace, time_ms, class_uid, activity_id, severity_id, status_id, actor, operation, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
)

var qRollupUpsert = traceSQL.RollupUpsert()

// withTenant runs fn in a transaction scoped to tenant.
func (s *Store) withTenant(ctx context.Context, tenant string, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := setTenant(ctx, tx, tenant); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

var readOnly = pgx.TxOptions{AccessMode: pgx.ReadOnly}

// SpanWrite stores the batch in one transaction.
func (s *Store) SpanWrite(ctx context.Context, tenant string, b *store.SpanBatch) error {
	return s.withTenant(ctx, tenant, pgx.TxOptions{}, func(tx pgx.Tx) error {
		pb := &pgx.Batch{}
		blocks := b.Blocks
		if len(b.Spans) > 0 {
			blocks = append(s.spans.EncodeBlocks(b.Spans), blocks...)
		}
		var lastSeen int64
		if n := len(blocks); n > 0 {
			ns, traces, data := make([]string, n), make([][]byte, n), make([][]byte, n)
			mins, maxs, counts := make([]int64, n), make([]int64, n), make([]int32, n)
			var keyOrd, keyMax []int64
			var keyKind []int16
			var keyValue []string
			for i := range blocks {
				bl := &blocks[i]
				ns[i], traces[i], data[i] = bl.Namespace, bl.TraceID[:], bl.Data
				mins[i], maxs[i], counts[i] = bl.MinStart, bl.MaxStart, int32(bl.Spans)
				lastSeen = max(lastSeen, bl.MaxStart)
				for _, k := range bl.Keys {
					keyOrd, keyKind, keyValue, keyMax = append(keyOrd, int64(i+1)), append(keyKind, int16(k.Kind)), append(keyValue, k.Value), append(keyMax, bl.MaxStart)
				}
			}
			pb.Queue(qBlockInsert, tenant, ns, traces, mins, maxs, counts, data, keyOrd, keyKind, keyValue, keyMax)
		}
		for _, r := range b.Resources {
			pb.Queue(qSpanResourceUpsert, tenant, r.ID, r.Data, lastSeen)
		}
		for i := range b.Rollups {
			pb.Queue(qRollupUpsert, store.RollupArgs(tenant, &b.Rollups[i])...)
		}
		for _, e := range b.Events {
			pb.Queue(qOCSFInsert, tenant, e.Namespace, e.Time, e.ClassUID, e.ActivityID, e.SeverityID, e.StatusID, e.Actor, e.Operation, e.Data)
		}
		if err := tx.SendBatch(ctx, pb).Close(); err != nil {
			return fmt.Errorf("postgres: span write: %w", err)
		}
		return nil
	})
}

// SpanList returns the spans matching f: those of blocks and those of
// the per-span table of earlier versions, read in one transaction.
func (s *Store) SpanList(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, error) {
	var out []store.Span
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		var err error
		out, err = s.spanList(ctx, tx, tenant, f)
		return err
	})
	return out, err
}

// SpanListResources returns the spans matching f and their resources in
// one transaction.
func (s *Store) SpanListResources(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, map[int64][]byte, error) {
	var spans []store.Span
	res := map[int64][]byte{}
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		var err error
		if spans, err = s.spanList(ctx, tx, tenant, f); err != nil {
			return err
		}
		return spanResources(ctx, tx, tenant, store.SpanResourceIDs(spans), res)
	})
	if err != nil {
		return nil, nil, err
	}
	return spans, res, nil
}

// spanList reads the spans matching f in tx.
func (s *Store) spanList(ctx context.Context, tx pgx.Tx, tenant string, f store.SpanFilter) ([]store.Span, error) {
	rows, err := spanRows(ctx, tx, tenant, f)
	if err != nil {
		return nil, err
	}
	blocks, err := store.ListBlockSpans(s.spans, f, func(cur *store.BlockCursor, n int) ([]store.StoredBlock, error) {
		return blockPage(ctx, tx, tenant, f, cur, n)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list spans: %w", err)
	}
	return store.MergeSpans(f, rows, blocks), nil
}

// blockPage reads one page of blocks (store.BlockPage).
func blockPage(ctx context.Context, tx pgx.Tx, tenant string, f store.SpanFilter, cur *store.BlockCursor, n int) ([]store.StoredBlock, error) {
	q, args := traceSQL.SpanBlockList(tenant, f, cur, n)
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list span blocks: %w", err)
	}
	defer rows.Close()
	out, err := store.ScanBlocks(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return out, nil
}

// spanRows returns the spans matching f of the per-span table.
func spanRows(ctx context.Context, tx pgx.Tx, tenant string, f store.SpanFilter) ([]store.Span, error) {
	q, args := traceSQL.SpanList(tenant, f)
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list spans: %w", err)
	}
	defer rows.Close()
	var out []store.Span
	for rows.Next() {
		var sp store.Span
		var traceID, spanID, parentID []byte
		var service, agent, tool, model, execution *string
		var cost *float64
		var tokens *int64
		var kind, status int16
		if err := rows.Scan(&sp.Namespace, &traceID, &spanID, &parentID, &sp.Name, &kind, &sp.Start, &sp.End, &status,
			&service, &agent, &tool, &model, &execution, &cost, &tokens, &sp.Resource, &sp.Data); err != nil {
			return nil, fmt.Errorf("postgres: scan span: %w", err)
		}
		copy(sp.TraceID[:], traceID)
		copy(sp.SpanID[:], spanID)
		copy(sp.ParentID[:], parentID)
		sp.Kind, sp.Status = int(kind), int(status)
		sp.Service, sp.Agent, sp.Tool, sp.Model, sp.Execution = deref(service), deref(agent), deref(tool), deref(model), deref(execution)
		if cost != nil {
			sp.Cost = *cost
		}
		if tokens != nil {
			sp.Tokens = *tokens
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list spans: %w", err)
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SpanResourceGet returns the resources with the given ids.
func (s *Store) SpanResourceGet(ctx context.Context, tenant string, ids []int64) (map[int64][]byte, error) {
	out := map[int64][]byte{}
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		return spanResources(ctx, tx, tenant, ids, out)
	})
	return out, err
}

// spanResources reads the resources with the given ids into out.
func spanResources(ctx context.Context, tx pgx.Tx, tenant string, ids []int64, out map[int64][]byte) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id, data FROM span_resources WHERE tenant_id = $1 AND id = ANY($2)`, tenant, ids)
	if err != nil {
		return fmt.Errorf("postgres: get span resources: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			return fmt.Errorf("postgres: scan span resource: %w", err)
		}
		out[id] = data
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: get span resources: %w", err)
	}
	return nil
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
	var out []store.SpanRollup
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		q, args, err := traceSQL.SpanRollupList(tenant, f)
		if err != nil {
			return fmt.Errorf("postgres: list span rollups: %w", err)
		}
		// sum(bigint) is numeric in Postgres: cast the sums back.
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("postgres: list span rollups: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r store.SpanRollup
			var calls, errs, tokens *float64
			var lat, cost *float64
			var hist [store.SpanHistBuckets]*float64
			targets := append(store.RollupGroupTargets(&r, f.GroupBy), &calls, &errs, &lat, &cost, &tokens)
			for i := range hist {
				targets = append(targets, &hist[i])
			}
			if err := rows.Scan(targets...); err != nil {
				return fmt.Errorf("postgres: scan span rollup: %w", err)
			}
			if calls == nil {
				continue // the sums over no rows, without GROUP BY
			}
			r.Calls, r.Errors, r.Tokens = int64(*calls), int64(*errs), int64(*tokens)
			r.LatencySum, r.Cost = *lat, *cost
			for i := range hist {
				r.Hist[i] = int64(*hist[i])
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// OCSFEventList returns OCSF events matching f, newest first.
func (s *Store) OCSFEventList(ctx context.Context, tenant string, f store.OCSFFilter) ([]store.StoredOCSFEvent, error) {
	var out []store.StoredOCSFEvent
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		q, args := traceSQL.OCSFEventList(tenant, f)
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("postgres: list OCSF events: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e store.StoredOCSFEvent
			var class, act, sev, st int32
			if err := rows.Scan(&e.ID, &e.Namespace, &e.Time, &class, &act, &sev, &st, &e.Actor, &e.Operation, &e.Data); err != nil {
				return fmt.Errorf("postgres: scan OCSF event: %w", err)
			}
			e.ClassUID, e.ActivityID, e.SeverityID, e.StatusID = int(class), int(act), int(sev), int(st)
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// SpanExpire deletes at most limit rows of each trace table older than
// its cut-off, oldest first, in one transaction.
func (s *Store) SpanExpire(ctx context.Context, tenant string, cut store.TraceCutoffs, limit int) (int, error) {
	total := 0
	err := s.withTenant(ctx, tenant, pgx.TxOptions{}, func(tx pgx.Tx) error {
		ns := cut.Spans.UnixNano()
		for _, q := range []struct {
			sql string
			arg any
			cut time.Time
			// count: the statement returns the count of rows deleted.
			count bool
		}{
			// The blocks and, in the same statement, their keys.
			{`WITH gone AS (DELETE FROM span_blocks WHERE id = ANY(ARRAY(SELECT id FROM span_blocks WHERE tenant_id = $1 AND max_start < $2 ORDER BY max_start LIMIT $3))
				RETURNING id), keys AS (DELETE FROM span_keys WHERE tenant_id = $1 AND block_id IN (SELECT id FROM gone))
				SELECT count(*) FROM gone`, ns, cut.Spans, true},
			{`DELETE FROM spans WHERE ctid = ANY(ARRAY(SELECT ctid FROM spans WHERE tenant_id = $1 AND start_ns < $2 ORDER BY start_ns LIMIT $3))`, ns, cut.Spans, false},
			{`DELETE FROM span_resources WHERE ctid = ANY(ARRAY(SELECT ctid FROM span_resources WHERE tenant_id = $1 AND last_seen < $2 LIMIT $3))`, ns, cut.Spans, false},
			{`DELETE FROM span_rollups WHERE ctid = ANY(ARRAY(SELECT ctid FROM span_rollups WHERE tenant_id = $1 AND minute < $2 ORDER BY minute LIMIT $3))`,
				cut.Metrics.Unix() / 60 * 60, cut.Metrics, false},
			{`DELETE FROM ocsf_events WHERE ctid = ANY(ARRAY(SELECT ctid FROM ocsf_events WHERE tenant_id = $1 AND time_ms < $2 ORDER BY time_ms LIMIT $3))`,
				cut.OCSFEvents.UnixMilli(), cut.OCSFEvents, false},
		} {
			if q.cut.IsZero() {
				continue
			}
			var n int64
			if q.count {
				if err := tx.QueryRow(ctx, q.sql, tenant, q.arg, limit).Scan(&n); err != nil {
					return fmt.Errorf("postgres: expire span blocks: %w", err)
				}
			} else {
				tag, err := tx.Exec(ctx, q.sql, tenant, q.arg, limit)
				if err != nil {
					return fmt.Errorf("postgres: expire spans: %w", err)
				}
				n = tag.RowsAffected()
			}
			total = max(total, int(n))
		}
		return nil
	})
	return total, err
}
