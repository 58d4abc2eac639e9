package gateway

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Resume starts an approved call: it moves the call from AwaitingApproval
// to Running with its resourceVersion as a precondition, so that of any
// number of resume jobs, sweeps, replicas and restarts exactly one runs the
// tool, and then runs steps 7 to 9 in the background. A call that is not
// approved and awaiting, or that another resumer claimed, is left alone.
// It is the resume job's work, and it returns once the call is claimed:
// the job then has nothing left that a crash could lose (a Running call
// whose process dies is finished by finishInterrupted), so it needs only a
// short timeout, and River rescues it soon from a process killed before
// the claim.
func (g *Gateway) Resume(ctx context.Context, tenant, ns, name string) error {
	if !g.bg.hold() {
		return errorf("resume approved call %s: the gateway is shutting down", name)
	}
	claimed, err := g.claimApproved(ctx, tenant, ns, name)
	if err != nil || claimed == nil {
		g.bg.release()
		return err
	}
	go func() {
		defer g.bg.release()
		if err := g.runClaimed(context.WithoutCancel(ctx), tenant, name, claimed); err != nil {
			g.log.Error("run approved call", "toolcall", name, "err", err)
		}
	}()
	return nil
}

// claimApproved moves the approved call ns/name from AwaitingApproval to
// Running; nil when it is not an approved call awaiting its run, or
// another resumer claimed it first.
func (g *Gateway) claimApproved(ctx context.Context, tenant, ns, name string) (*resource.Object, error) {
	var claimed *resource.Object
	err := g.rec.do(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		claimed = nil
		key := resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: name}
		tc, err := getIfExists(ctx, tx, key)
		if err != nil || tc == nil {
			return err
		}
		ap, _ := tc.Spec["approval"].(map[string]any)
		status, _ := ap["status"].(string)
		if phase, _ := tc.Status["phase"].(string); phase != PhaseAwaitingApproval || (status != ApprovalApproved && status != ApprovalOverridden) {
			return nil
		}
		st := cloneMap(tc.Status)
		now := g.now().UTC()
		st["phase"], st["startedAt"] = PhaseRunning, timestamp(now)
		endWaitIn(st, now)
		claimed, err = tx.ResourceUpdateStatus(ctx, key, st, tc.Metadata.ResourceVersion)
		if errors.Is(err, store.ErrConflict) {
			claimed = nil
			return nil
		}
		return err
	})
	if err != nil {
		return nil, errorf("claim approved call %s: %w", name, err)
	}
	return claimed, nil
}

// runClaimed runs steps 7 to 9 of a call Resume claimed.
func (g *Gateway) runClaimed(ctx context.Context, tenant, name string, claimed *resource.Object) error {
	v, err := viewOf(claimed)
	if err != nil {
		return err
	}
	ctx, span := g.tracer.Start(ctx, "warden.toolcall.resume", trace.WithAttributes(
		attribute.String("warden.toolcall", name), attribute.String("warden.tool", v.Spec.ToolRef.Name),
		attribute.String("warden.tenant", tenant), attribute.String("warden.namespace", claimed.Metadata.Namespace)))
	defer span.End()
	c, available, err := g.callFromRecord(ctx, recordAgent(tenant, claimed, v), claimed, v, span)
	if err != nil {
		return err
	}
	if !available {
		res := &result{failure: apierr.New(apierr.CodeUnavailable, "tool %q or agent %q no longer exists, so the approved call cannot run", c.req.Tool, c.p.Agent), cost: -1}
		return c.finish(ctx, res)
	}
	_, err = g.execute(ctx, c)
	if _, isAPI := apierr.As(err); isAPI {
		// The tool's own failure is recorded in the call.
		return nil
	}
	return err
}

// recordAgent is the agent a ToolCall record was made for, as the
// principal of work the gateway does for it on its own (resumption, the
// end of an interrupted call).
func recordAgent(tenant string, obj *resource.Object, v *View) auth.Principal {
	ns := obj.Metadata.Namespace
	return auth.Principal{Tenant: tenant, Namespace: ns, Agent: v.Spec.AgentRef.Name, Kind: auth.KindAgent,
		Subject: "agent:" + ns + "/" + v.Spec.AgentRef.Name, Environment: obj.Metadata.Annotations[AnnotationEnvironment]}
}

// getIfExists reads key in tx; nil when there is no such resource.
func getIfExists(ctx context.Context, tx store.Reader, key resource.Key) (*resource.Object, error) {
	obj, err := tx.ResourceGet(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return obj, err
}

// Sweep finishes, for every tenant, the approval work a stopped process
// may have left undone: it resumes approved calls that never started, in
// this process, whatever became of their resume jobs (a crash before the
// job was inserted, or one that left the job running: River would rescue
// it only after the job's timeout, and its uniqueness keeps another from
// being queued); it expires the pending approvals whose deadline passed
// and schedules the expiry of the others; and it ends the calls a stopped
// gateway left Running (finishInterrupted). Resuming and expiring are safe
// to repeat and to race with the jobs, on this replica or another: both
// write with the record's resourceVersion as precondition. Run it at
// start-up, once the Queue works.
func (g *Gateway) Sweep(ctx context.Context) error { return g.sweep(ctx, true) }

// SweepPeriodic does the work of Sweep for what other replicas left: a
// replica that dies and is not restarted. It is meant to run once per
// cluster (the server's periodic job). Unlike Sweep it neither schedules
// expiry jobs nor sets timers for calls still within their run limit: the
// next period finds those again.
func (g *Gateway) SweepPeriodic(ctx context.Context) error { return g.sweep(ctx, false) }

func (g *Gateway) sweep(ctx context.Context, startup bool) error {
	tenants, err := g.st.TenantList(ctx)
	if err != nil {
		return errorf("sweep: list tenants: %w", err)
	}
	for _, t := range tenants {
		var calls, running, approvals []*resource.Object
		err := g.st.View(ctx, t.ID, func(ctx context.Context, r store.Reader) error {
			sel, err := resource.ParseSelector("status.phase=" + PhaseAwaitingApproval)
			if err != nil {
				return err
			}
			res, err := store.ListAll(ctx, r, resource.KindToolCall, sel)
			if err != nil {
				return err
			}
			calls = res
			if sel, err = resource.ParseSelector("status.phase=" + PhaseRunning); err != nil {
				return err
			}
			if running, err = store.ListAll(ctx, r, resource.KindToolCall, sel); err != nil {
				return err
			}
			sel, err = resource.ParseSelector("status.status=" + ApprovalPending)
			if err != nil {
				return err
			}
			approvals, err = store.ListAll(ctx, r, resource.KindApproval, sel)
			return err
		})
		if err != nil {
			return errorf("sweep tenant %s: %w", t.ID, err)
		}
		for _, c := range calls {
			ap, _ := c.Spec["approval"].(map[string]any)
			if st, _ := ap["status"].(string); st == ApprovalApproved || st == ApprovalOverridden {
				g.resumeHere(ctx, t.ID, c.Metadata.Namespace, c.Metadata.Name)
			}
		}
		for _, c := range running {
			if err := g.finishInterrupted(ctx, t.ID, c, startup); err != nil {
				return errorf("sweep: interrupted call %s: %w", c.Metadata.Name, err)
			}
		}
		for _, a := range approvals {
			at, ok := expiresAt(a)
			switch {
			case !ok:
			case !g.now().Before(at):
				if err := g.Expire(ctx, t.ID, a.Metadata.Namespace, a.Metadata.Name); err != nil {
					return errorf("sweep: expire %s: %w", a.Metadata.Name, err)
				}
			case startup && g.cfg.Queue != nil:
				if err := g.cfg.Queue.Expire(ctx, t.ID, a.Metadata.Namespace, a.Metadata.Name, at); err != nil {
					return errorf("sweep: schedule expiry of %s: %w", a.Metadata.Name, err)
				}
			}
		}
	}
	return nil
}
