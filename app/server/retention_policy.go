package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Default retention of a tenant whose Tenant resource sets none
// (spec.retention, docs/operations.md).
const (
	DefaultToolCallRetention = 30 * 24 * time.Hour
	DefaultEventRetention    = 7 * 24 * time.Hour
	DefaultAuditRetention    = 365 * 24 * time.Hour
	DefaultSpanRetention     = 7 * 24 * time.Hour
	DefaultMetricRetention   = 90 * 24 * time.Hour
	DefaultOCSFRetention     = 7 * 24 * time.Hour
)

// retentionSkew is added to a tenant's longest idempotency window before a
// finished call may go: for replicas whose clocks differ. A call whose
// claim could still block a retry is never deleted, or the retry would
// find the holder gone and run the tool again.
const retentionSkew = sweepMargin

// Retention is a tenant's retention policy, its Tenant resource's
// spec.retention with the defaults filled in.
type Retention struct {
	// ToolCalls is how long a ToolCall is kept after it finished and an
	// Approval after it was decided.
	ToolCalls time.Duration
	// Events is how long internal events are kept.
	Events time.Duration
	// Audit is how long audit records are kept.
	Audit time.Duration
	// Spans, Metrics and OCSFEvents are how long the trace service keeps
	// spans, call metrics and OCSF events.
	Spans, Metrics, OCSFEvents time.Duration
}

// RetentionOf returns the retention of spec, the defaults where it sets
// none (or, having passed validation, nothing parseable).
func RetentionOf(spec *resource.TenantRetention) Retention {
	r := Retention{ToolCalls: DefaultToolCallRetention, Events: DefaultEventRetention, Audit: DefaultAuditRetention,
		Spans: DefaultSpanRetention, Metrics: DefaultMetricRetention, OCSFEvents: DefaultOCSFRetention}
	if spec == nil {
		return r
	}
	for _, f := range []struct {
		v   string
		out *time.Duration
	}{{spec.ToolCalls, &r.ToolCalls}, {spec.Events, &r.Events}, {spec.Audit, &r.Audit},
		{spec.Spans, &r.Spans}, {spec.Metrics, &r.Metrics}, {spec.OCSFEvents, &r.OCSFEvents}} {
		if d, err := time.ParseDuration(f.v); err == nil && d > 0 {
			*f.out = d
		}
	}
	return r
}

// RetainTenants applies every tenant's retention at now (forEachTenant):
// finished ToolCalls and decided Approvals, events, expired console
// sessions and audit records older than the tenant's retention go, each
// in transactions of store.RetentionChunk rows; the audit log is cut
// behind a checkpoint sealed by sealer (the master key). The change log
// (Config.ChangeHistory) and the gateway's claims and counters
// (SweepGateway) have their own rules.
func RetainTenants(ctx context.Context, st store.Store, sealer audit.Sealer, now time.Time) error {
	return forEachTenant(ctx, st, func(tenant string) error { return RetainTenant(ctx, st, sealer, tenant, now) })
}

// RetainTenant applies one tenant's retention at now.
func RetainTenant(ctx context.Context, st store.Store, sealer audit.Sealer, tenant string, now time.Time) error {
	var ret Retention
	var window time.Duration
	if err := st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var spec resource.TenantSpec
		switch o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: tenant}); {
		case err == nil:
			if spec, err = resource.DecodeSpec[resource.TenantSpec](o); err != nil {
				return fmt.Errorf("decode the Tenant resource: %w", err)
			}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		ret = RetentionOf(spec.Retention)
		policies, err := store.ListAll(ctx, r, resource.KindPolicy, nil)
		window, _ = policy.Windows(policies)
		return err
	}); err != nil {
		return err
	}
	var errs []error
	callsDone, callsCreated := now.Add(-ret.ToolCalls), now.Add(-window-retentionSkew)
	if err := purgeRecords(ctx, st, tenant, resource.KindToolCall, func(o *resource.Object) (due, stop bool) {
		return toolCallDue(o, callsDone, callsCreated)
	}); err != nil {
		errs = append(errs, fmt.Errorf("tool calls: %w", err))
	}
	if err := purgeRecords(ctx, st, tenant, resource.KindApproval, func(o *resource.Object) (due, stop bool) {
		return approvalDue(o, callsDone)
	}); err != nil {
		errs = append(errs, fmt.Errorf("approvals: %w", err))
	}
	if err := sweepChunks(ctx, st, tenant, func(ctx context.Context, tx store.Tx) (int, error) {
		return tx.EventSweep(ctx, now.Add(-ret.Events), store.RetentionChunk)
	}); err != nil {
		errs = append(errs, fmt.Errorf("events: %w", err))
	}
	if err := sweepChunks(ctx, st, tenant, func(ctx context.Context, tx store.Tx) (int, error) {
		return tx.SessionSweep(ctx, now, store.RetentionChunk)
	}); err != nil {
		errs = append(errs, fmt.Errorf("sessions: %w", err))
	}
	if err := cutAudit(ctx, st, sealer, tenant, now.Add(-ret.Audit), now); err != nil {
		errs = append(errs, fmt.Errorf("audit log: %w", err))
	}
	if err := expireTraces(ctx, st, tenant, store.TraceCutoffs{Spans: now.Add(-ret.Spans), Metrics: now.Add(-ret.Metrics),
		OCSFEvents: now.Add(-ret.OCSFEvents)}); err != nil {
		errs = append(errs, fmt.Errorf("traces: %w", err))
	}
	return errors.Join(errs...)
}

// expireTraces deletes the tenant's spans, call metrics and OCSF events
// older than their cut-offs, store.RetentionChunk rows of each table a
// transaction, so that the trace writers wait for one short transaction
// at most.
func expireTraces(ctx context.Context, st store.Store, tenant string, cut store.TraceCutoffs) error {
	for {
		n, err := st.SpanExpire(ctx, tenant, cut, store.RetentionChunk)
		if err != nil || n < store.RetentionChunk {
			return err
		}
	}
}

// sweepChunks runs sweep, one transaction each, until it deletes fewer
// than store.RetentionChunk rows.
func sweepChunks(ctx context.Context, st store.Store, tenant string, sweep func(context.Context, store.Tx) (int, error)) error {
	return store.UpdateUntilDone(ctx, st.Update, tenant, func(ctx context.Context, tx store.Tx) (bool, error) {
		n, err := sweep(ctx, tx)
		return n < store.RetentionChunk, err
	})
}

// purgeRecords walks the records of kind least recently written first, a
// chunk read at a time outside the writer, and purges those verdict calls
// due, one transaction a chunk (a record written since it was read is
// kept). It stops at the first record verdict says is too recent to be
// followed by any due one: records after it were written later still.
func purgeRecords(ctx context.Context, st store.Store, tenant, kind string, verdict func(*resource.Object) (due, stop bool)) error {
	var after int64
	for {
		var page []*resource.Object
		if err := st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			page, err = r.RecordsOldest(ctx, kind, after, store.RetentionChunk)
			return err
		}); err != nil {
			return err
		}
		done := len(page) < store.RetentionChunk
		var due []*resource.Object
		for _, o := range page {
			d, stop := verdict(o)
			if stop {
				done = true
				break
			}
			if d {
				due = append(due, o)
			}
			v, err := store.ParseVersion(o.Metadata.ResourceVersion)
			if err != nil {
				return err
			}
			after = v
		}
		if len(due) > 0 {
			if err := st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.RecordsPurge(ctx, due)
				return err
			}); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// toolCallDue says whether a ToolCall may go: it finished before finished
// and was created (its idempotency claim made) before created. It stops
// the walk at a call written after either time.
func toolCallDue(o *resource.Object, finished, created time.Time) (due, stop bool) {
	createdAt := parseTime(o.Metadata.CreationTimestamp)
	last := latest(createdAt, parseTime(field(o.Status, "startedAt")), parseTime(field(o.Status, "completedAt")))
	if last.IsZero() || !last.Before(finished) || !createdAt.Before(created) {
		return false, !last.IsZero()
	}
	return resource.ToolCallFinished(field(o.Status, "phase")), false
}

// approvalDue says whether an Approval may go: it was decided (or
// expired) before decided. A pending one never goes. It stops the walk at
// an approval written after decided.
func approvalDue(o *resource.Object, decided time.Time) (due, stop bool) {
	decidedAt := field(o.Status, "decidedAt")
	last := latest(parseTime(o.Metadata.CreationTimestamp), parseTime(decidedAt))
	if last.IsZero() || !last.Before(decided) {
		return false, !last.IsZero()
	}
	if st := field(o.Status, "status"); st == "" || st == resource.ApprovalPending {
		return false, false
	}
	if decidedAt == "" {
		// Expired without a decision: it went when it expired.
		if exp := parseTime(field(o.Spec, "expiresAt")); exp.IsZero() || !exp.Before(decided) {
			return false, false
		}
	}
	return true, false
}

// field returns m[key] when it is a string.
func field(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// cutAudit removes the tenant's audit records stored before before, the
// oldest store.RetentionChunk at a time, each cut behind a checkpoint of
// its last record sealed by sealer at now. A cut that another replica
// made first (store.ErrConflict) ends the round.
func cutAudit(ctx context.Context, st store.Store, sealer audit.Sealer, tenant string, before, now time.Time) error {
	for {
		var recs []audit.Record
		if err := st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			cp, err := r.AuditCheckpoint(ctx)
			if err != nil {
				return err
			}
			params := store.AuditListParams{Limit: store.RetentionChunk}
			if cp != nil {
				params.After = cp.Seq
			}
			recs, err = r.AuditList(ctx, params)
			return err
		}); err != nil {
			return err
		}
		n := 0
		for n < len(recs) && recs[n].Time.Before(before) {
			n++
		}
		if n == 0 {
			return nil
		}
		last := recs[n-1]
		cp, err := audit.SealCheckpoint(sealer, audit.Checkpoint{Tenant: tenant, Seq: last.Seq, Hash: last.Hash, Time: last.Time, CutAt: now})
		if err != nil {
			return err
		}
		err = st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.AuditCut(ctx, cp)
			return err
		})
		if errors.Is(err, store.ErrConflict) {
			return nil
		}
		if err != nil || n < len(recs) || len(recs) < store.RetentionChunk {
			return err
		}
	}
}
