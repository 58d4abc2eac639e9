package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/warden-dev/warden/app/store"
)

// InviteArgs is the e-mail that tells a person they were invited.
type InviteArgs struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	InvitedBy string `json:"invitedBy"`
}

// Kind is the River job kind.
func (InviteArgs) Kind() string { return "warden.member.invite" }

// InviteSender sends invitation e-mails; notifications.Service is one.
type InviteSender interface {
	// DeliverInvite makes attempt (from 1) to send an invitation and
	// records it; final says no attempt follows a failure.
	DeliverInvite(ctx context.Context, args InviteArgs, attempt int, final bool) error
}

// Invitations enqueues invitation e-mails and runs their jobs.
type Invitations struct {
	n      *Notifications
	sender atomic.Pointer[InviteSender]
}

// NewInvitations registers the invitation worker on workers; jobs go in
// the queue of n.
func NewInvitations(workers *river.Workers, n *Notifications) *Invitations {
	i := &Invitations{n: n}
	river.AddWorker(workers, &inviteWorker{i: i})
	return i
}

// Bind sets the sender.
func (i *Invitations) Bind(s InviteSender) { i.sender.Store(&s) }

// InviteTx enqueues an invitation e-mail in the store transaction that
// adds the member.
func (i *Invitations) InviteTx(ctx context.Context, tx store.Tx, args InviteArgs) error {
	q := i.n.queue.Load()
	if q == nil {
		return errors.New("jobs: no queue set for invitations")
	}
	_, err := q.InsertStoreTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: DefaultNotifyAttempts})
	return err
}

type inviteWorker struct {
	river.WorkerDefaults[InviteArgs]
	i *Invitations
}

func (w *inviteWorker) Work(ctx context.Context, job *river.Job[InviteArgs]) error {
	s := w.i.sender.Load()
	if s == nil {
		return errors.New("jobs: invitation sender not bound yet")
	}
	return (*s).DeliverInvite(ctx, job.Args, job.Attempt, job.Attempt >= job.MaxAttempts)
}

func (w *inviteWorker) NextRetry(job *river.Job[InviteArgs]) time.Time {
	return time.Now().Add(notifyBackoff(job.Attempt))
}

func (w *inviteWorker) Timeout(*river.Job[InviteArgs]) time.Duration { return time.Minute }
