package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// DriverTx returns the *sql.Tx of the write, for River's InsertTx.
func (t *writeTx) DriverTx() any {
	if q, ok := t.q.(*stmtQuerier); ok {
		return q.tx
	}
	return t.q
}

// DeliveryInsert appends one delivery attempt's record.
func (t *writeTx) DeliveryInsert(ctx context.Context, d store.Delivery) error {
	if d.ID == "" {
		d.ID = store.NewUID()
	}
	if d.Time.IsZero() {
		d.Time = t.s.now()
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO notification_deliveries (tenant_id, id, namespace, approval, channel, type,
		recipient, attempt, outcome, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.tenant, d.ID, d.Namespace, d.Approval, d.Channel, d.Type, d.Recipient, d.Attempt, d.Outcome, d.Error, d.Time.UnixMicro()); err != nil {
		return interpretError(fmt.Errorf("sqlite: insert delivery of %s/%s: %w", d.Namespace, d.Approval, err))
	}
	return nil
}

// DeliveryList returns an approval's delivery attempts, oldest first.
func (t *readTx) DeliveryList(ctx context.Context, namespace, approval string) ([]store.Delivery, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT id, namespace, approval, channel, type, recipient, attempt, outcome, error, at
		FROM notification_deliveries WHERE tenant_id = ? AND namespace = ? AND approval = ? ORDER BY at, id`, t.tenant, namespace, approval)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries of %s/%s: %w", namespace, approval, err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.Delivery
	for rows.Next() {
		var d store.Delivery
		var at int64
		if err := rows.Scan(&d.ID, &d.Namespace, &d.Approval, &d.Channel, &d.Type, &d.Recipient, &d.Attempt, &d.Outcome, &d.Error, &at); err != nil {
			return nil, fmt.Errorf("sqlite: list deliveries: %w", err)
		}
		d.Time = time.UnixMicro(at).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries: %w", err)
	}
	return out, nil
}
