package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// qInsertRouteDecision is prepared at Open: the model router's recorder
// runs it for every model call.
const qInsertRouteDecision = `INSERT INTO route_decisions (tenant_id, id, namespace, execution, route, agent, time, data)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// RouteDecisionInsert appends the model router's routing decisions.
func (t *writeTx) RouteDecisionInsert(ctx context.Context, ds []store.RouteDecision) error {
	for _, d := range ds {
		if err := store.CheckRouteDecision(d); err != nil {
			return err
		}
		if _, err := t.q.ExecContext(ctx, qInsertRouteDecision, t.tenant, d.ID, d.Namespace, d.Execution, d.Route, d.Agent, d.Time.UnixMicro(), []byte(d.Data)); err != nil {
			return fmt.Errorf("insert route decision %s: %w", d.ID, err)
		}
	}
	return nil
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
