package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
)

// RouteDecisionInsert appends the model router's routing decisions.
func (t *writeTx) RouteDecisionInsert(ctx context.Context, ds []store.RouteDecision) error {
	for _, d := range ds {
		if err := store.CheckRouteDecision(d); err != nil {
			return err
		}
		if _, err := t.q.Exec(ctx, `INSERT INTO route_decisions (tenant_id, id, namespace, execution, route, agent, time, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.tenant, d.ID, d.Namespace, d.Execution, d.Route, d.Agent, d.Time.UTC(), string(d.Data)); err != nil {
			return fmt.Errorf("insert route decision %s: %w", d.ID, err)
		}
	}
	return nil
}

// RouteEventsInsert appends events in order; EventInsert already writes a
// transaction's events in one statement when it commits.
func (t *writeTx) RouteEventsInsert(ctx context.Context, evs []events.Event) ([]events.Event, error) {
	out := make([]events.Event, 0, len(evs))
	for _, ev := range evs {
		stored, err := t.EventInsert(ctx, ev)
		if err != nil {
			return nil, err
		}
		out = append(out, stored)
	}
	return out, nil
}

// RouteDecisionList returns the decisions of one execution and route.
func (t *readTx) RouteDecisionList(ctx context.Context, p store.RouteDecisionListParams) ([]store.RouteDecision, error) {
	rows, err := t.q.Query(ctx, `SELECT id, namespace, execution, route, agent, time, data::text FROM route_decisions
		WHERE tenant_id = $1 AND namespace = $2 AND execution = $3 AND route = $4 ORDER BY seq LIMIT $5`,
		t.tenant, p.Namespace, p.Execution, p.Route, store.PageLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("list route decisions: %w", err)
	}
	defer rows.Close()
	var out []store.RouteDecision
	for rows.Next() {
		var d store.RouteDecision
		var data string
		if err := rows.Scan(&d.ID, &d.Namespace, &d.Execution, &d.Route, &d.Agent, &d.Time, &data); err != nil {
			return nil, fmt.Errorf("list route decisions: %w", err)
		}
		d.Time, d.Data = d.Time.UTC(), []byte(data)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list route decisions: %w", err)
	}
	return out, nil
}

// RouteDecisionSweep deletes up to limit decisions made before before.
func (t *writeTx) RouteDecisionSweep(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := t.q.Exec(ctx, `DELETE FROM route_decisions WHERE seq IN (
		SELECT seq FROM route_decisions WHERE tenant_id = $1 AND time < $2 ORDER BY time LIMIT $3)`, t.tenant, before, limit)
	if err != nil {
		return 0, fmt.Errorf("route decision sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
