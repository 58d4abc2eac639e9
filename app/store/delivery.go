package store

import (
	"context"
	"fmt"
	"time"
)

// Outcomes of one delivery attempt of a notification.
const (
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	// DeliveryGaveUp is a failed attempt after which no other follows.
	DeliveryGaveUp = "gave_up"
)

// Delivery is the durable record of one attempt to deliver an approval's
// notification on one channel to one recipient. Every attempt is kept,
// so people can see what was delivered, when, and why an attempt failed.
type Delivery struct {
	// ID is set by the driver when empty.
	ID        string
	Namespace string
	// Approval is the Approval's name.
	Approval string
	// Channel is the NotificationChannel's name; Type its type (email,
	// webhook, slack).
	Channel string
	Type    string
	// Recipient is the e-mail address, or the host of the webhook URL.
	Recipient string
	// Attempt counts from 1.
	Attempt int
	// Outcome is DeliveryDelivered, DeliveryFailed or DeliveryGaveUp.
	Outcome string
	// Error is the failure's text (empty when delivered); never a secret.
	Error string
	Time  time.Time
}

// DeliveryTx records delivery attempts. The drivers' write transactions
// implement it; use DeliveryInsert, which asks for it.
type DeliveryTx interface {
	// DeliveryInsert appends one attempt's record.
	DeliveryInsert(ctx context.Context, d Delivery) error
}

// DeliveryReader reads delivery attempts. The drivers' transactions
// implement it; use DeliveryList, which asks for it.
type DeliveryReader interface {
	// DeliveryList returns the attempts recorded for one approval, oldest
	// first.
	DeliveryList(ctx context.Context, namespace, approval string) ([]Delivery, error)
}

// DriverTx is implemented by the SQL drivers' write transactions: DriverTx
// returns the database transaction itself (*sql.Tx for SQLite, pgx.Tx for
// Postgres), so that a job queue on the same database inserts its jobs in
// it (River's InsertTx) and they commit or roll back with the store's
// writes.
type DriverTx interface {
	DriverTx() any
}

// DeliveryInsert appends one attempt's record in tx.
func DeliveryInsert(ctx context.Context, tx Tx, d Delivery) error {
	dt, ok := tx.(DeliveryTx)
	if !ok {
		return fmt.Errorf("store: transaction %T cannot record deliveries", tx)
	}
	return dt.DeliveryInsert(ctx, d)
}

// DeliveryList returns the attempts recorded for one approval, oldest
// first, read through r.
func DeliveryList(ctx context.Context, r Reader, namespace, approval string) ([]Delivery, error) {
	dr, ok := r.(DeliveryReader)
	if !ok {
		return nil, fmt.Errorf("store: reader %T cannot list deliveries", r)
	}
	return dr.DeliveryList(ctx, namespace, approval)
}
