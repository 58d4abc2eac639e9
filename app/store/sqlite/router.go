package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// qInsertRouteDecision is prepared at Open: the model router's recorder
// runs it for every model call.
const qInsertRouteDecision = `INSERT INTO route_decisions (tenant_id, id, namespace, execution, route, agent, time, data)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// routeInsertRows is the most rows one INSERT of the router's recorder
// carries (8 parameters a row, far below SQLite's limit of 32,766): a
// statement a row cost most of the recorder's time.
const routeInsertRows = 64

// RouteDecisionInsert appends the model router's routing decisions, up to
// routeInsertRows in one statement.
func (t *writeTx) RouteDecisionInsert(ctx context.Context, ds []store.RouteDecision) error {
	for _, d := range ds {
		if err := store.CheckRouteDecision(d); err != nil {
			return err
		}
	}
	for len(ds) > 0 {
		n := min(len(ds), routeInsertRows)
		chunk := ds[:n]
		ds = ds[n:]
		args := make([]any, 0, 8*n)
		for _, d := range chunk {
			args = append(args, t.tenant, d.ID, d.Namespace, d.Execution, d.Route, d.Agent, d.Time.UnixMicro(), []byte(d.Data))
		}
		if _, err := t.q.ExecContext(ctx, multiRow(qInsertRouteDecision, n), args...); err != nil {
			return fmt.Errorf("insert route decisions %s…%s: %w", chunk[0].ID, chunk[n-1].ID, err)
		}
	}
	return nil
}

// RouteEventsInsert appends events, assigning their per-tenant sequences,
// up to routeInsertRows in one statement.
func (t *writeTx) RouteEventsInsert(ctx context.Context, evs []events.Event) ([]events.Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]events.Event, len(evs))
	args := make([]any, 0, 7*min(len(evs), routeInsertRows))
	seq := st.eventSeq
	for i, ev := range evs {
		seq++
		ev.Seq, ev.Tenant = seq, t.tenant
		if ev.Time.IsZero() {
			ev.Time = t.s.now()
		}
		ev.Time = ev.Time.UTC().Truncate(time.Microsecond)
		var data []byte
		if len(ev.Data) > 0 {
			if data, err = resource.MarshalValue(ev.Data); err != nil {
				return nil, fmt.Errorf("insert event %s: encode data: %w", ev.Type, err)
			}
		}
		out[i] = ev
		args = append(args, t.tenant, ev.Seq, ev.Type, ev.Time.UnixMicro(), ev.Namespace, ev.Subject, data)
		if n := len(args) / 7; n == routeInsertRows || i == len(evs)-1 {
			if _, err := t.q.ExecContext(ctx, multiRow(qInsertEvent, n), args...); err != nil {
				return nil, fmt.Errorf("insert %d events: %w", n, err)
			}
			args = args[:0]
		}
	}
	st.eventSeq, t.dirty = seq, true
	return out, nil
}

// multiRow is insert (an INSERT of one row of VALUES) extended to n rows;
// one row is insert itself, prepared at Open.
func multiRow(insert string, n int) string {
	if n == 1 {
		return insert
	}
	_, row, _ := strings.Cut(insert, "VALUES ")
	row = strings.TrimSpace(row)
	var b strings.Builder
	b.Grow(len(insert) + (n-1)*(len(row)+2))
	b.WriteString(insert)
	for range n - 1 {
		b.WriteString(", ")
		b.WriteString(row)
	}
	return b.String()
}

// RouteDecisionList returns the decisions of one execution and route.
func (t *readTx) RouteDecisionList(ctx context.Context, p store.RouteDecisionListParams) ([]store.RouteDecision, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT id, namespace, execution, route, agent, time, data FROM route_decisions
		WHERE tenant_id = ? AND namespace = ? AND execution = ? AND route = ? ORDER BY rowid LIMIT ?`,
		t.tenant, p.Namespace, p.Execution, p.Route, store.PageLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("list route decisions: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.RouteDecision
	for rows.Next() {
		var d store.RouteDecision
		var micros int64
		var data []byte
		if err := rows.Scan(&d.ID, &d.Namespace, &d.Execution, &d.Route, &d.Agent, &micros, &data); err != nil {
			return nil, fmt.Errorf("list route decisions: %w", err)
		}
		d.Time, d.Data = time.UnixMicro(micros).UTC(), data
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list route decisions: %w", err)
	}
	return out, nil
}

// RouteDecisionSweep deletes up to limit decisions made before before.
func (t *writeTx) RouteDecisionSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	return t.deleted(ctx, "route decision sweep", `DELETE FROM route_decisions WHERE rowid IN (
		SELECT rowid FROM route_decisions WHERE tenant_id = ? AND time < ? ORDER BY time LIMIT ?)`, t.tenant, before.UnixMicro(), limit)
}
