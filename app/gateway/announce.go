package gateway

import (
	"context"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Announcer enqueues the notifications of a new Approval in the store
// transaction that creates it (notifications.Service): no approval exists
// without its notifications, and none are sent for one that rolled back.
type Announcer interface {
	// AnnounceTx enqueues the notifications of ap, created in tx by a call
	// of an agent running in environment env.
	AnnounceTx(ctx context.Context, tx store.Tx, tenant string, ap *resource.Object, env string) error
}

// announce hands a new approval to the Announcer, if there is one.
func (g *Gateway) announce(ctx context.Context, tx store.Tx, tenant string, ap *resource.Object, env string) error {
	if g.cfg.Announcer == nil {
		return nil
	}
	return g.cfg.Announcer.AnnounceTx(ctx, tx, tenant, ap, env)
}
