package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// DriverTx returns the pgx transaction, for River's InsertTx.
func (t *writeTx) DriverTx() any { return t.q }

// DeliveryInsert appends one delivery attempt's record.
func (t *writeTx) DeliveryInsert(ctx context.Context, d store.Delivery) error {
	if d.ID == "" {
		d.ID = store.NewUID()
	}
	if d.Time.IsZero() {
		d.Time = t.s.now()
	}
	if _, err := t.q.Exec(ctx, `INSERT INTO notification_deliveries (tenant_id, id, namespace, approval, channel, type,
		recipient, attempt, outcome, error, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		t.tenant, d.ID, d.Namespace, d.Approval, d.Channel, d.Type, d.Recipient, d.Attempt, d.Outcome, d.Error, d.Time.UTC()); err != nil {
		return interpretError(fmt.Errorf("postgres: insert delivery of %s/%s: %w", d.Namespace, d.Approval, err))
	}
	return nil
}

// DeliveryList returns an approval's delivery attempts, oldest first.
func (t *readTx) DeliveryList(ctx context.Context, namespace, approval string) ([]store.Delivery, error) {
	rows, err := t.q.Query(ctx, `SELECT id, namespace, approval, channel, type, recipient, attempt, outcome, error, at
		FROM notification_deliveries WHERE tenant_id = $1 AND namespace = $2 AND approval = $3 ORDER BY at, id`, t.tenant, namespace, approval)
	if err != nil {
		return nil, fmt.Errorf("postgres: list deliveries of %s/%s: %w", namespace, approval, err)
	}
	defer rows.Close()
	var out []store.Delivery
	for rows.Next() {
		var d store.Delivery
		var at time.Time
		if err := rows.Scan(&d.ID, &d.Namespace, &d.Approval, &d.Channel, &d.Type, &d.Recipient, &d.Attempt, &d.Outcome, &d.Error, &at); err != nil {
			return nil, fmt.Errorf("postgres: list deliveries: %w", err)
		}
		d.Time = at.UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list deliveries: %w", err)
	}
	return out, nil
}
