package execution

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
)

// eventPage is how many events of the tenant one read scans.
const eventPage = 500

// Events returns the events of execution name with a sequence number
// greater than after, oldest first, and the sequence number to resume
// from (the last scanned, which may be past the last returned).
func (s *Service) Events(ctx context.Context, tenant, ns, name string, after int64) ([]events.Event, int64, error) {
	var out []events.Event
	cursor := after
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, tx store.Reader) error {
		for {
			page, err := tx.EventList(ctx, cursor, eventPage)
			if err != nil {
				return fmt.Errorf("list events: %w", err)
			}
			for _, ev := range page {
				cursor = ev.Seq
				if ev.Namespace == ns && ev.Subject == subject(name) {
					out = append(out, ev)
				}
			}
			if len(page) < eventPage {
				return nil
			}
		}
	})
	return out, cursor, err
}

// IsLast reports whether ev ends an execution's event log.
func IsLast(ev events.Event) bool {
	return ev.Type == events.ExecutionSucceeded || ev.Type == events.ExecutionFailed
}

// Follow calls fn with every event of execution name after after, as they
// are recorded, until the execution's last event was delivered, ctx ends
// or fn fails. It wakes on the in-process bus and, for runs on other
// replicas, every poll interval, when it calls idle (if not nil) after a
// read that found nothing: a stream writes a keep-alive there, which also
// finds a client that went away.
func (s *Service) Follow(ctx context.Context, tenant, ns, name string, after int64, poll time.Duration,
	fn func(events.Event) error, idle func() error) error {
	wake := make(chan struct{}, 1)
	if s.cfg.Bus != nil {
		unsubscribe := s.cfg.Bus.Subscribe(func(ev events.Event) {
			if ev.Tenant == tenant && ev.Namespace == ns && ev.Subject == subject(name) {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
		defer unsubscribe()
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	cursor := after
	for {
		// The phase is read before the events: a run finished then has
		// its last event in this read (both are one transaction).
		cur, err := s.Get(ctx, tenant, ns, name)
		if err != nil {
			return err
		}
		evs, next, err := s.Events(ctx, tenant, ns, name, cursor)
		if err != nil {
			return err
		}
		cursor = next
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
			if IsLast(ev) {
				return nil
			}
		}
		if Finished(phaseOf(cur)) {
			// Its last event came before the resume point.
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-ticker.C:
			if idle != nil && len(evs) == 0 {
				if err := idle(); err != nil {
					return err
				}
			}
		}
	}
}
