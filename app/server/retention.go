package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// DefaultChangeHistory is how many change-log entries each tenant keeps
// when Config.ChangeHistory is zero: at the tool gateway's two entries a
// call (its record, then its result), 50,000 calls, about 100 MB of a
// tenant's storage for calls of a kilobyte. A watcher that falls further
// behind, or resumes from an older resourceVersion, gets 410 Gone and lists
// again, as with Kubernetes.
const DefaultChangeHistory = 100_000

// retainEvery is how often the change logs are compacted and the
// gateway's claims and counters swept: often enough that a round drops a
// few seconds of writes, a few chunks of store.CompactChunk entries, each a
// short transaction, rather than a pile that holds the tenant's writers
// for long.
const retainEvery = 10 * time.Second

// Retain compacts every tenant's change log to Config.ChangeHistory
// entries (none when it is negative), sweeps the tool gateway's claims
// and counters and applies every tenant's retention (RetainTenants). It is the once-per-cluster retention job's work
// (jobs.Cluster). Two replicas running it at once do no harm: a compaction
// takes the tenant's lock and moves the floor only up, and a sweep deletes
// only what no call can use, and a record, event, session or audit record
// is deleted once (a cut another replica made first is left alone).
func (s *Server) Retain(ctx context.Context) error {
	var errs []error
	if keep := s.cfg.ChangeHistory; keep > 0 {
		if err := CompactChanges(ctx, s.store, keep); err != nil {
			errs = append(errs, fmt.Errorf("compact change logs: %w", err))
		}
	}
	if err := SweepGateway(ctx, s.store, s.cfg.Now()); err != nil {
		errs = append(errs, fmt.Errorf("sweep idempotency claims and usage counters: %w", err))
	}
	if err := RetainTenants(ctx, s.store, s.cfg.Keyring, s.cfg.Now()); err != nil {
		errs = append(errs, fmt.Errorf("apply the tenants' retention: %w", err))
	}
	return errors.Join(errs...)
}

// retain runs Retain every retainEvery until ctx ends: the single server's
// loop when there is no Config.Cluster.
func (s *Server) retain(ctx context.Context) {
	every(ctx, retainEvery, func() {
		if err := s.Retain(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "retention", "err", err)
		}
	})
}

// forEachTenant calls fn for every tenant, goes on past a tenant fn fails
// for, and reports every failure.
func forEachTenant(ctx context.Context, st store.Store, fn func(tenant string) error) error {
	tenants, err := st.TenantList(ctx)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	var errs []error
	for _, t := range tenants {
		if err := fn(t.ID); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

// sweepMargin is kept beyond the longest window a tenant's policies set,
// for clocks of replicas that differ. It is short because what it keeps
// is large: every call leaves a claim (about 250 bytes), and at 3,000
// calls/s an hour's margin held 2.7 GB of claims that block nothing. A
// claim older than its window no longer blocks a retry whether it is kept
// or not; only a window lengthened after the claim was made would have
// kept blocking, and then the retry runs as it would have under the window
// the call was made with.
const sweepMargin = time.Minute

// SweepGateway deletes, for every tenant, the tool gateway's idempotency
// claims and usage counters that no call can use any more: claims made
// longer ago than the longest idempotency window of the tenant's policies
// (plus sweepMargin), released or not, and counters of windows that started
// longer ago than the longest limit window (plus sweepMargin; the model
// router's counters are among them). Claims go oldest first,
// store.CompactChunk a transaction (forEachTenant). It also deletes the
// model router's routing decisions older than RouteDecisionRetention.
func SweepGateway(ctx context.Context, st store.Store, now time.Time) error {
	return forEachTenant(ctx, st, func(tenant string) error { return sweepTenant(ctx, st, tenant, now) })
}

func sweepTenant(ctx context.Context, st store.Store, tenant string, now time.Time) error {
	var policies []*resource.Object
	if err := st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		policies, err = store.ListAll(ctx, r, resource.KindPolicy, nil)
		return err
	}); err != nil {
		return err
	}
	idempotency, limit := policy.Windows(policies)
	claimsBefore, countersBefore := now.Add(-idempotency-sweepMargin), now.Add(-limit-sweepMargin)
	if err := store.UpdateUntilDone(ctx, st.Update, tenant, func(ctx context.Context, tx store.Tx) (bool, error) {
		deleted, err := tx.IdempotencySweep(ctx, claimsBefore, store.CompactChunk)
		return deleted < store.CompactChunk, err
	}); err != nil {
		return err
	}
	if err := st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.UsageSweep(ctx, countersBefore)
		return err
	}); err != nil {
		return err
	}
	decisionsBefore := now.Add(-RouteDecisionRetention)
	return store.UpdateUntilDone(ctx, st.Update, tenant, func(ctx context.Context, tx store.Tx) (bool, error) {
		deleted, err := tx.RouteDecisionSweep(ctx, decisionsBefore, store.CompactChunk)
		return deleted < store.CompactChunk, err
	})
}

// RouteDecisionRetention is how long the model router's routing decisions
// are kept for GET /v1/route/{name}/explain (docs/router.md).
const RouteDecisionRetention = 30 * 24 * time.Hour

// CompactChanges drops, for every tenant, the change-log entries more than
// keep entries behind its newest (forEachTenant).
func CompactChanges(ctx context.Context, st store.Store, keep int) error {
	return forEachTenant(ctx, st, func(tenant string) error { return st.ChangesCompact(ctx, tenant, keep) })
}
