package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

// testDeliveries: attempts are kept in order per approval, and another
// tenant sees none of them.
func testDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant, other := NewTenant(), NewTenant()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	attempts := []store.Delivery{
		{Namespace: "default", Approval: "ap-1", Channel: "mail", Type: "email", Recipient: "a@example.com", Attempt: 1,
			Outcome: store.DeliveryFailed, Error: "421 try later", Time: t0},
		{Namespace: "default", Approval: "ap-1", Channel: "mail", Type: "email", Recipient: "a@example.com", Attempt: 2,
			Outcome: store.DeliveryDelivered, Time: t0.Add(time.Second)},
		{Namespace: "default", Approval: "ap-2", Channel: "hook", Type: "webhook", Recipient: "hooks.example.com", Attempt: 1,
			Outcome: store.DeliveryGaveUp, Error: "500", Time: t0},
	}
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for _, d := range attempts {
			if err := store.DeliveryInsert(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	}))
	list := func(tenant, approval string) []store.Delivery {
		var out []store.Delivery
		require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			out, err = store.DeliveryList(ctx, r, "default", approval)
			return err
		}))
		return out
	}
	got := list(tenant, "ap-1")
	require.Len(t, got, 2)
	for i, d := range got {
		require.NotEmpty(t, d.ID)
		d.ID = ""
		require.Equal(t, attempts[i], d)
	}
	require.Len(t, list(tenant, "ap-2"), 1)
	require.Empty(t, list(other, "ap-1"), "another tenant sees the attempts")

	// A rolled-back transaction leaves no record.
	require.Error(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		if err := store.DeliveryInsert(ctx, tx, store.Delivery{Namespace: "default", Approval: "ap-3", Channel: "c", Type: "email",
			Recipient: "r", Attempt: 1, Outcome: store.DeliveryDelivered}); err != nil {
			return err
		}
		return context.Canceled
	}))
	require.Empty(t, list(tenant, "ap-3"))
}
