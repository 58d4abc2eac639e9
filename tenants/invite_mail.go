package tenants

import (
	"context"

	"github.com/warden-dev/warden/app/store"
)

// Inviter tells an invited person, by a job enqueued in the transaction
// that adds them (jobs.Invitations with notifications.Service sending).
type Inviter interface {
	// InviteTx enqueues the invitation of email to namespace with role,
	// made by invitedBy, in tx.
	InviteTx(ctx context.Context, tx store.Tx, tenant, namespace, email, role, invitedBy string) error
}

// WithInviter returns s sending invitations through i; nil sends none.
func (s *Service) WithInviter(i Inviter) *Service {
	c := *s
	c.inviter = i
	return &c
}
