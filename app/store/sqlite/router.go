package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/yield"
)

// qInsertRouteDecision is prepared at Open: the model router's recorder
// runs it for every model call.
const qInsertRouteDecision = `INSERT INTO route_decisions (tenant_id, id, namespace, execution, route, agent, time, data)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// The router's recorder inserts its rows several to a statement: a
// statement a row cost most of its time. Each size of routeInsertSizes
// has its statement prepared at Open (parsing a many-row INSERT costs as
// much as running it); a batch is cut greedily into those sizes. 16 rows
// are some 50 µs of work, the most a request waits for the recorder to
// step aside (insertRows); 16 rows of 8 parameters are far below SQLite's
// limit of 32,766.
var (
	routeInsertSizes      = [...]int{16, 4, 1}
	qInsertRouteDecisions = multiRows(qInsertRouteDecision)
	qInsertEvents         = multiRows(qInsertEvent)
)

// routerQueries are the router's statements Open prepares.
func routerQueries() []string {
	return append(qInsertRouteDecisions[:len(routeInsertSizes)-1:len(routeInsertSizes)-1], qInsertEvents[:len(routeInsertSizes)-1]...)
}

// multiRows is insert (an INSERT of one row of VALUES) extended to each
// size of routeInsertSizes.
func multiRows(insert string) [len(routeInsertSizes)]string {
	_, row, _ := strings.Cut(insert, "VALUES ")
	row = strings.TrimSpace(row)
	var out [len(routeInsertSizes)]string
	for i, n := range routeInsertSizes {
		var b strings.Builder
		b.WriteString(insert)
		for range n - 1 {
			b.WriteString(", ")
			b.WriteString(row)
		}
		out[i] = b.String()
	}
	return out
}

// insertRows runs the multi-row statement of stmts that fits the rows
// left, of width parameters each, until args is used up. Before each
// statement it yields its processor: SQLite runs in the caller's
// goroutine, and a batch of a few hundred rows is milliseconds of work
// that on one core would hold up every call waiting to run (Go preempts
// a running goroutine only after 10 ms). With a Yielder in ctx it lets in
// the goroutines whose request or upstream answer has arrived too; without,
// only those already runnable (runtime.Gosched; package yield).
func (t *writeTx) insertRows(ctx context.Context, stmts *[len(routeInsertSizes)]string, width int, args []any) error {
	for len(args) > 0 {
		yield.Yield(ctx)
		rows := len(args) / width
		i := 0
		for routeInsertSizes[i] > rows {
			i++
		}
		n := routeInsertSizes[i] * width
		if _, err := t.q.ExecContext(ctx, stmts[i], args[:n]...); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}

// RouteDecisionInsert appends the model router's routing decisions, many
// to a statement.
func (t *writeTx) RouteDecisionInsert(ctx context.Context, ds []store.RouteDecision) error {
	args := make([]any, 0, 8*len(ds))
	for _, d := range ds {
		if err := store.CheckRouteDecision(d); err != nil {
			return err
		}
		args = append(args, t.tenant, d.ID, d.Namespace, d.Execution, d.Route, d.Agent, d.Time.UnixMicro(), []byte(d.Data))
	}
	if err := t.insertRows(ctx, &qInsertRouteDecisions, 8, args); err != nil {
		return fmt.Errorf("insert %d route decisions: %w", len(ds), err)
	}
	return nil
}

// RouteEventsInsert appends events, assigning their per-tenant sequences,
// many to a statement.
func (t *writeTx) RouteEventsInsert(ctx context.Context, evs []events.Event) ([]events.Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	st, err := t.lockState(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]events.Event, len(evs))
	args := make([]any, 0, 7*len(evs))
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
	}
	if err := t.insertRows(ctx, &qInsertEvents, 7, args); err != nil {
		return nil, fmt.Errorf("insert %d events: %w", len(evs), err)
	}
	st.eventSeq, t.dirty = seq, true
	return out, nil
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
