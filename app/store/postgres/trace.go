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

// qSpanInsert inserts a whole batch in one statement over arrays, one per
// column (COPY is refused on tables under row-level security).
const qSpanInsert = `INSERT INTO spans (tenant_id, ` + store.SpanColumns + `)
	SELECT $1, * FROM unnest($2::text[], $3::bytea[], $4::bytea[], $5::bytea[], $6::text[], $7::smallint[], $8::bigint[], $9::bigint[],
		$10::smallint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::float8[], $17::bigint[], $18::bigint[], $19::bytea[])`

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
		if n := len(b.Spans); n > 0 {
			ns, names, services, agents, tools, models, execs := make([]string, n), make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
			traceIDs, spanIDs, parents, data := make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
			kinds, statuses := make([]int16, n), make([]int16, n)
			starts, ends, resources := make([]int64, n), make([]int64, n), make([]int64, n)
			costs, tokens := make([]*float64, n), make([]*int64, n)
			for i := range b.Spans {
				sp := &b.Spans[i]
				ns[i], names[i] = sp.Namespace, sp.Name
				traceIDs[i], spanIDs[i], data[i] = sp.TraceID[:], sp.SpanID[:], sp.Data
				if sp.ParentID != ([8]byte{}) {
					parents[i] = sp.ParentID[:]
				}
				kinds[i], statuses[i] = int16(sp.Kind), int16(sp.Status)
				starts[i], ends[i], resources[i] = sp.Start, sp.End, sp.Resource
				services[i], agents[i], tools[i], models[i], execs[i] = nullable(sp.Service), nullable(sp.Agent), nullable(sp.Tool), nullable(sp.Model), nullable(sp.Execution)
				if sp.Cost != 0 {
					costs[i] = &sp.Cost
				}
				if sp.Tokens != 0 {
					tokens[i] = &sp.Tokens
				}
			}
			pb.Queue(qSpanInsert, tenant, ns, traceIDs, spanIDs, parents, names, kinds, starts, ends, statuses,
				services, agents, tools, models, execs, costs, tokens, resources, data)
		}
		var lastSeen int64
		for i := range b.Spans {
			lastSeen = max(lastSeen, b.Spans[i].Start)
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

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SpanList returns the spans matching f.
func (s *Store) SpanList(ctx context.Context, tenant string, f store.SpanFilter) ([]store.Span, error) {
	var out []store.Span
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		q, args := traceSQL.SpanList(tenant, f)
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("postgres: list spans: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var sp store.Span
			var traceID, spanID, parentID []byte
			var service, agent, tool, model, execution *string
			var cost *float64
			var tokens *int64
			var kind, status int16
			if err := rows.Scan(&sp.Namespace, &traceID, &spanID, &parentID, &sp.Name, &kind, &sp.Start, &sp.End, &status,
				&service, &agent, &tool, &model, &execution, &cost, &tokens, &sp.Resource, &sp.Data); err != nil {
				return fmt.Errorf("postgres: scan span: %w", err)
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
			return fmt.Errorf("postgres: list spans: %w", err)
		}
		return nil
	})
	return out, err
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
		return rows.Err()
	})
	return out, err
}

// TraceSummaryList summarizes the given traces.
func (s *Store) TraceSummaryList(ctx context.Context, tenant string, namespaces []string, ids [][16]byte) ([]store.TraceSummary, error) {
	var out []store.TraceSummary
	if len(ids) == 0 {
		return nil, store.CheckTenant(tenant)
	}
	err := s.withTenant(ctx, tenant, readOnly, func(tx pgx.Tx) error {
		q, args := traceSQL.TraceSummaryList(tenant, namespaces, ids)
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("postgres: summarize traces: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var t store.TraceSummary
			var id []byte
			var n, e int64
			var root, service string
			if err := rows.Scan(&id, &n, &e, &t.Start, &t.End, &root, &service); err != nil {
				return fmt.Errorf("postgres: scan trace summary: %w", err)
			}
			copy(t.TraceID[:], id)
			t.Spans, t.Errors = int(n), int(e)
			t.Root, t.Service = store.SplitRootName(root), store.SplitRootName(service)
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
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
// before, oldest first, in one transaction.
func (s *Store) SpanExpire(ctx context.Context, tenant string, before time.Time, limit int) (int, error) {
	total := 0
	err := s.withTenant(ctx, tenant, pgx.TxOptions{}, func(tx pgx.Tx) error {
		ns := before.UnixNano()
		for _, q := range []struct {
			sql string
			arg any
		}{
			{`DELETE FROM spans WHERE ctid = ANY(ARRAY(SELECT ctid FROM spans WHERE tenant_id = $1 AND start_ns < $2 ORDER BY start_ns LIMIT $3))`, ns},
			{`DELETE FROM span_rollups WHERE ctid = ANY(ARRAY(SELECT ctid FROM span_rollups WHERE tenant_id = $1 AND minute < $2 ORDER BY minute LIMIT $3))`, before.Unix() / 60 * 60},
			{`DELETE FROM span_resources WHERE ctid = ANY(ARRAY(SELECT ctid FROM span_resources WHERE tenant_id = $1 AND last_seen < $2 LIMIT $3))`, ns},
			{`DELETE FROM ocsf_events WHERE ctid = ANY(ARRAY(SELECT ctid FROM ocsf_events WHERE tenant_id = $1 AND time_ms < $2 ORDER BY time_ms LIMIT $3))`, before.UnixMilli()},
		} {
			tag, err := tx.Exec(ctx, q.sql, tenant, q.arg, limit)
			if err != nil {
				return fmt.Errorf("postgres: expire spans: %w", err)
			}
			total = max(total, int(tag.RowsAffected()))
		}
		return nil
	})
	return total, err
}
