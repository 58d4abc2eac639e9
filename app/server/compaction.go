package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// DefaultChangeHistory is how many change-log entries each tenant keeps
// when Config.ChangeHistory is zero: at the tool gateway's two entries a
// call (its record, then its result), 50,000 calls, about 100 MB of a
// tenant's storage for calls of a kilobyte. A watcher that falls further
// behind, or resumes from an older resourceVersion, gets 410 Gone and lists
// again, as with Kubernetes.
const DefaultChangeHistory = 100_000

// changeCompactEvery is how often the change logs are compacted: often
// enough that a round drops a few seconds of writes, a few chunks of
// store.CompactChunk entries, each a short transaction, rather than a
// pile that holds the tenant's writers for long.
const changeCompactEvery = 10 * time.Second

// compactChanges compacts every tenant's change log every
// changeCompactEvery until ctx ends. Replicas sharing a store may all do
// it: a compaction takes the tenant's lock and moves the floor only up.
func (s *Server) compactChanges(ctx context.Context, keep int) {
	t := time.NewTicker(changeCompactEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := CompactChanges(ctx, s.store, keep); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "compact change logs", "err", err)
			}
		}
	}
}

// CompactChanges drops, for every tenant, the change-log entries more than
// keep entries behind its newest. It goes on past a tenant it cannot
// compact and reports every failure.
func CompactChanges(ctx context.Context, st store.Store, keep int) error {
	tenants, err := st.TenantList(ctx)
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	var errs []error
	for _, t := range tenants {
		if err := st.ChangesCompact(ctx, t.ID, keep); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}
