package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Channels a decision arrives through (api.DecideRequest.Channel).
const (
	ChannelAPI     = "api"
	ChannelConsole = "console"
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
)

// Approver returns the identity recorded for a decision: a person's
// e-mail, or the credential's subject.
func Approver(p auth.Principal) string {
	if p.Email != "" {
		return p.Email
	}
	return p.Subject
}

// Decide records an approver's decision on a pending approval and resumes
// (approve) or denies its call. override is the break-glass path: it needs
// the breakglass role and a rationale, records status overridden, and is
// an audit event of its own. A decision is final: deciding a decided,
// expired or cancelled approval is a Conflict.
func (g *Gateway) Decide(ctx context.Context, p auth.Principal, ns, name string, req api.DecideRequest, override bool) (*resource.Object, error) {
	ctx = authz.EnsureTrail(ctx)
	obj := authz.ObjApprovalsDecide
	if override {
		obj = authz.ObjApprovalsOverride
	}
	if err := g.cfg.Authz.Authorize(ctx, p, authz.VerbCreate, ns, obj); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			e := apierr.New(apierr.CodeForbidden, "%s may not %s approvals in namespace %q", p.Subject, map[bool]string{true: "override", false: "decide"}[override], ns)
			g.auditRefusal(ctx, p, obj, "Approval/"+name, "", e)
			return nil, e
		}
		return nil, err
	}
	if req.Decision != api.DecisionApprove && req.Decision != api.DecisionDeny {
		return nil, apierr.New(apierr.CodeInvalidRequest, "decision must be %q or %q, not %q", api.DecisionApprove, api.DecisionDeny, req.Decision)
	}
	req.Rationale = strings.TrimSpace(req.Rationale)
	if override && req.Rationale == "" {
		return nil, apierr.New(apierr.CodeInvalidRequest, "a break-glass override needs a rationale")
	}
	if len(req.Rationale) > 4096 {
		return nil, apierr.New(apierr.CodeInvalidRequest, "rationale is longer than 4096 bytes")
	}
	if req.Channel == "" {
		req.Channel = ChannelAPI
	}
	now := g.now().UTC()
	who := Approver(p)
	status := ApprovalApproved
	if req.Decision == api.DecisionDeny {
		status = ApprovalDenied
	}
	if override {
		status = ApprovalOverridden
	}
	var (
		out      *resource.Object
		evs      []events.Event
		conflict *apierr.Error
		callName string
		// queued: the resume job committed with the decision.
		queued bool
	)
	err := g.rec.do(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		out, evs, conflict, callName, queued = nil, nil, nil, "", false
		ap, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			conflict = apierr.New(apierr.CodeNotFound, "approval %q not found in namespace %q", name, ns)
			return nil
		}
		if err != nil {
			return err
		}
		cur, _ := ap.Status["status"].(string)
		if cur != ApprovalPending {
			conflict = apierr.New(apierr.CodeConflict, "approval %q was already decided: %s by %v at %v", name, cur, ap.Status["decidedBy"], ap.Status["decidedAt"])
			return nil
		}
		if exp, ok := expiresAt(ap); ok && !now.Before(exp) {
			w := &approvalWriter{g: g, tx: tx, tenant: p.Tenant, ns: ns, now: now}
			if err := w.expire(ctx, ap); err != nil {
				return err
			}
			evs = w.evs
			conflict = apierr.New(apierr.CodeConflict, "approval %q expired at %s", name, exp.Format(time.RFC3339))
			return nil
		}
		if err := authz.AuthorizeDecision(p, requesterOf(ap)); err != nil {
			conflict = apierr.New(apierr.CodeForbidden, "%s requested approval %q and may not decide it, whatever its role bindings", p.Subject, name)
			_, err := tx.AuditInsert(ctx, audit.Record{Time: now, Tenant: p.Tenant, Actor: p.Subject, Verb: obj, Namespace: ns,
				Resource: "Approval/" + name, Outcome: audit.OutcomeDenied, Policy: "separation of duties: the requester never decides", Reason: err.Error()})
			return err
		}
		w := &approvalWriter{g: g, tx: tx, tenant: p.Tenant, ns: ns, now: now}
		w.channel = req.Channel
		out, err = w.decide(ctx, ap, status, who, req.Rationale)
		if err != nil {
			return err
		}
		callName = refName(ap.Spec, "toolCallRef")
		if callName != "" {
			if err := w.decideCall(ctx, callName, req.Decision == api.DecisionApprove, status, who, req.Rationale); err != nil {
				return err
			}
		}
		typ := events.ApprovalGranted
		if req.Decision == api.DecisionDeny {
			typ = events.ApprovalDenied
		}
		w.event(ctx, typ, "Approval/"+name, map[string]any{"approval": name, "toolCall": callName, "decision": req.Decision,
			"decidedBy": who, "override": override, "channel": req.Channel})
		if callName != "" && req.Decision == api.DecisionApprove {
			w.event(ctx, events.ToolCallApproved, "ToolCall/"+callName, map[string]any{"approval": name, "approvedBy": who, "override": override})
			if tq, ok := g.cfg.Queue.(TxQueue); ok {
				if queued, err = tq.ResumeTx(ctx, tx, p.Tenant, ns, callName); err != nil {
					return err
				}
			}
		}
		verb := "approvals/decide"
		if override {
			verb = "approvals/override"
		}
		reason := req.Decision + " via " + req.Channel
		if req.Rationale != "" {
			reason += ": " + req.Rationale
		}
		if _, err := tx.AuditInsert(ctx, audit.Record{Time: now, Tenant: p.Tenant, Actor: p.Subject, Verb: verb, Namespace: ns,
			Resource: "Approval/" + name, Outcome: audit.OutcomeAllowed, Policy: authz.EffectivePolicy(ctx, p), Reason: reason}); err != nil {
			return err
		}
		evs = w.evs
		return w.err
	})
	if err != nil {
		return nil, errorf("decide approval %s: %w", name, err)
	}
	g.publish(evs)
	if conflict != nil {
		return nil, conflict
	}
	if callName != "" {
		g.waiters.wake(p.Tenant, ns+"/"+callName)
		if req.Decision == api.DecisionApprove && !queued {
			g.scheduleResume(ctx, p.Tenant, ns, callName)
		}
	}
	return out, nil
}

// scheduleResume hands an approved call to the job queue, or runs it in
// this process when there is none.
func (g *Gateway) scheduleResume(ctx context.Context, tenant, ns, call string) {
	if g.cfg.Queue != nil {
		if err := g.cfg.Queue.Resume(ctx, tenant, ns, call); err != nil {
			g.log.ErrorContext(ctx, "schedule resumption of an approved call; the startup sweep will retry", "toolcall", call, "err", err)
		}
		return
	}
	g.resumeHere(ctx, tenant, ns, call)
}

// resumeHere resumes an approved call in this process. It is safe
// whatever else resumes the call (a resume job here or on another
// replica): Resume claims the call with its resourceVersion as
// precondition, so one of them runs it.
func (g *Gateway) resumeHere(ctx context.Context, tenant, ns, call string) {
	if err := g.Resume(context.WithoutCancel(ctx), tenant, ns, call); err != nil {
		g.log.Error("resume approved call", "toolcall", call, "err", err)
	}
}

// requesterOf returns who requested an approval: its agent and the
// requesting credential.
func requesterOf(ap *resource.Object) authz.Requester {
	return authz.Requester{Namespace: ap.Metadata.Namespace, Agent: refName(ap.Spec, "agentRef"),
		Subject: ap.Metadata.Annotations[AnnotationRequestedBy]}
}

func refName(spec map[string]any, field string) string {
	m, _ := spec[field].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

func expiresAt(ap *resource.Object) (time.Time, bool) {
	s, _ := ap.Spec["expiresAt"].(string)
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// approvalWriter writes approval changes inside one transaction.
type approvalWriter struct {
	g      *Gateway
	tx     store.Tx
	tenant string
	ns     string
	now    time.Time
	evs    []events.Event
	err    error
	// channel is where a decision arrived, recorded with it.
	channel string
}

func (w *approvalWriter) event(ctx context.Context, typ, subject string, data map[string]any) {
	if w.err != nil {
		return
	}
	ev, err := w.tx.EventInsert(ctx, events.Event{Type: typ, Time: w.now, Tenant: w.tenant, Namespace: w.ns, Subject: subject, Data: data})
	if err != nil {
		w.err = err
		return
	}
	w.evs = append(w.evs, ev)
}

// decide writes the approval's decision, with its resourceVersion as a
// precondition so that two concurrent decisions cannot both land.
func (w *approvalWriter) decide(ctx context.Context, ap *resource.Object, status, who, rationale string) (*resource.Object, error) {
	st := map[string]any{"status": status, "decidedBy": who, "decidedAt": timestamp(w.now)}
	if rationale != "" {
		st["rationale"] = rationale
	}
	if w.channel != "" {
		st["channel"] = w.channel
	}
	return w.tx.ResourceUpdateStatus(ctx, ap.Key(), st, ap.Metadata.ResourceVersion)
}

// decideCall applies a decision to the paused call: approve records the
// approver and leaves the call for the resume job; deny ends it.
func (w *approvalWriter) decideCall(ctx context.Context, name string, approve bool, status, who, rationale string) error {
	key := resource.Key{Kind: resource.KindToolCall, Namespace: w.ns, Name: name}
	tc, err := w.tx.ResourceGet(ctx, key)
	if err != nil {
		return err
	}
	if phase, _ := tc.Status["phase"].(string); phase != PhaseAwaitingApproval {
		return fmt.Errorf("tool call %s is %s, not %s", name, phase, PhaseAwaitingApproval)
	}
	upd := tc.DeepCopy()
	ap, _ := upd.Spec["approval"].(map[string]any)
	if ap == nil {
		ap = map[string]any{}
	}
	ap["status"] = status
	if !approve {
		ap["status"] = ApprovalDenied
	}
	ap["decidedBy"] = who
	if approve {
		ap["approvedBy"] = who
	}
	upd.Spec["approval"] = ap
	upd.Metadata.ResourceVersion = tc.Metadata.ResourceVersion
	if tc, err = w.tx.ResourceUpdate(ctx, upd); err != nil {
		return err
	}
	if approve {
		return nil
	}
	msg := "the approver denied the call"
	if rationale != "" {
		msg += ": " + rationale
	}
	return w.end(ctx, tc, PhaseDenied, errorOutput(apierr.CodeApprovalDenied, msg, map[string]any{"approval": ApprovalName(name), "decidedBy": who}))
}

// end moves a call that never ran to a final phase and frees its key.
func (w *approvalWriter) end(ctx context.Context, tc *resource.Object, phase string, output map[string]any) error {
	st := cloneMap(tc.Status)
	st["phase"], st["completedAt"], st["output"] = phase, timestamp(w.now), output
	endWaitIn(st, w.now)
	if _, err := w.tx.ResourceUpdateStatus(ctx, tc.Key(), st, tc.Metadata.ResourceVersion); err != nil {
		return err
	}
	se, _ := tc.Spec["sideEffects"].(map[string]any)
	key, _ := se["idempotencyKey"].(string)
	return w.tx.IdempotencyRelease(ctx, w.ns, key, tc.Metadata.Name)
}

// expire marks a pending approval and its call expired.
func (w *approvalWriter) expire(ctx context.Context, ap *resource.Object) error {
	if _, err := w.tx.ResourceUpdateStatus(ctx, ap.Key(), map[string]any{"status": ApprovalExpired, "decidedAt": timestamp(w.now),
		"rationale": "no decision before " + fmt.Sprint(ap.Spec["expiresAt"])}, ap.Metadata.ResourceVersion); err != nil {
		return err
	}
	name := refName(ap.Spec, "toolCallRef")
	if name != "" {
		tc, err := w.tx.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: w.ns, Name: name})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil {
			if phase, _ := tc.Status["phase"].(string); phase == PhaseAwaitingApproval {
				upd := tc.DeepCopy()
				if a, ok := upd.Spec["approval"].(map[string]any); ok {
					a["status"] = ApprovalExpired
				}
				upd.Metadata.ResourceVersion = tc.Metadata.ResourceVersion
				if tc, err = w.tx.ResourceUpdate(ctx, upd); err != nil {
					return err
				}
				if err := w.end(ctx, tc, PhaseExpired, errorOutput(apierr.CodeApprovalDenied,
					"no approver decided before the approval expired", map[string]any{"approval": ap.Metadata.Name})); err != nil {
					return err
				}
			}
		}
	}
	w.event(ctx, events.ApprovalDenied, "Approval/"+ap.Metadata.Name, map[string]any{"approval": ap.Metadata.Name, "toolCall": name, "decision": "expired"})
	if _, err := w.tx.AuditInsert(ctx, audit.Record{Time: w.now, Tenant: w.tenant, Actor: "system", Verb: "approvals/expire", Namespace: w.ns,
		Resource: "Approval/" + ap.Metadata.Name, Outcome: audit.OutcomeDenied, Policy: "system", Reason: "expired"}); err != nil {
		return err
	}
	return w.err
}

// Expire expires an approval whose deadline passed; it is the expiry job's
// work and does nothing for a decided or not yet due approval.
func (g *Gateway) Expire(ctx context.Context, tenant, ns, name string) error {
	now := g.now().UTC()
	var evs []events.Event
	var call string
	err := g.rec.do(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		evs, call = nil, ""
		ap, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: ns, Name: name})
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if st, _ := ap.Status["status"].(string); st != ApprovalPending {
			return nil
		}
		if exp, ok := expiresAt(ap); !ok || now.Before(exp) {
			return nil
		}
		w := &approvalWriter{g: g, tx: tx, tenant: tenant, ns: ns, now: now}
		if err := w.expire(ctx, ap); err != nil {
			return err
		}
		evs, call = w.evs, refName(ap.Spec, "toolCallRef")
		return nil
	})
	if err != nil {
		return errorf("expire approval %s: %w", name, err)
	}
	g.publish(evs)
	if call != "" {
		g.waiters.wake(tenant, ns+"/"+call)
	}
	return nil
}

// Cancel cancels a call that has not started: one awaiting approval (its
// approval is closed as denied) or pending. The calling agent itself may
// cancel, and so may whoever may decide approvals in the namespace.
func (g *Gateway) Cancel(ctx context.Context, p auth.Principal, ns, name string) (*resource.Object, error) {
	ctx = authz.EnsureTrail(ctx)
	if p.Agent == "" {
		if err := g.cfg.Authz.Authorize(ctx, p, authz.VerbCreate, ns, authz.ObjApprovalsDecide); err != nil {
			if errors.Is(err, auth.ErrForbidden) {
				return nil, apierr.New(apierr.CodeForbidden, "%s may not cancel tool calls in namespace %q", p.Subject, ns)
			}
			return nil, err
		}
	}
	now := g.now().UTC()
	var (
		out      *resource.Object
		evs      []events.Event
		conflict *apierr.Error
	)
	err := g.rec.do(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		out, evs, conflict = nil, nil, nil
		key := resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: name}
		tc, err := tx.ResourceGet(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			conflict = apierr.New(apierr.CodeNotFound, "tool call %q not found in namespace %q", name, ns)
			return nil
		}
		if err != nil {
			return err
		}
		if p.Agent != "" && refName(tc.Spec, "agentRef") != p.Agent {
			conflict = apierr.New(apierr.CodeNotFound, "tool call %q not found in namespace %q", name, ns)
			return nil
		}
		phase, _ := tc.Status["phase"].(string)
		if phase != PhaseAwaitingApproval && phase != PhasePending {
			conflict = apierr.New(apierr.CodeConflict, "tool call %q is %s: only a call that has not started (Pending or AwaitingApproval) can be cancelled", name, phase)
			return nil
		}
		w := &approvalWriter{g: g, tx: tx, tenant: p.Tenant, ns: ns, now: now}
		ap, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindApproval, Namespace: ns, Name: ApprovalName(name)})
		if err == nil {
			if st, _ := ap.Status["status"].(string); st == ApprovalPending {
				if _, err := w.decide(ctx, ap, ApprovalDenied, Approver(p), "the call was cancelled"); err != nil {
					return err
				}
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := w.end(ctx, tc, PhaseCancelled, errorOutput("Cancelled", "cancelled by "+Approver(p), nil)); err != nil {
			return err
		}
		if out, err = tx.ResourceGet(ctx, key); err != nil {
			return err
		}
		if _, err := tx.AuditInsert(ctx, audit.Record{Time: now, Tenant: p.Tenant, Actor: p.Subject, Verb: "toolcalls/cancel", Namespace: ns,
			Resource: "ToolCall/" + name, Outcome: audit.OutcomeAllowed, Policy: authz.EffectivePolicy(ctx, p)}); err != nil {
			return err
		}
		evs = w.evs
		return w.err
	})
	if err != nil {
		return nil, errorf("cancel %s: %w", name, err)
	}
	g.publish(evs)
	if conflict != nil {
		return nil, conflict
	}
	g.waiters.wake(p.Tenant, ns+"/"+name)
	return out, nil
}

// ApprovalRequest is the body of POST /v1/approvals.
type ApprovalRequest struct {
	// Tool names the action the agent asks about, if any.
	Tool string `json:"tool,omitempty"`
	// SideEffect is the action's side-effect class.
	SideEffect string `json:"sideEffect,omitempty"`
	// Reason is the question put to the approver.
	Reason string `json:"reason"`
	// Timeout is a Go duration; default the bound policies' approval
	// timeout.
	Timeout string `json:"timeout,omitempty"`
}

// RequestApproval creates an Approval that no tool call waits for: an
// agent asks a person before an action the gateway does not see. Only an
// agent's workload identity may ask, in its own namespace.
func (g *Gateway) RequestApproval(ctx context.Context, p auth.Principal, req ApprovalRequest) (*resource.Object, error) {
	if err := g.requireAgent(p); err != nil {
		return nil, err
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if req.Reason == "" || len(req.Reason) > 4096 {
		return nil, apierr.New(apierr.CodeInvalidRequest, "reason is required (at most 4096 bytes): it is the question the approver answers")
	}
	if req.SideEffect != "" && !slices.Contains(resource.SideEffectClasses(), req.SideEffect) {
		return nil, apierr.New(apierr.CodeInvalidRequest, "sideEffect %q is not a side-effect class", req.SideEffect)
	}
	snap, err := g.catalog.get(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	ae, ok := snap.agents[nsName{p.Namespace, p.Agent}]
	if !ok {
		return nil, apierr.New(apierr.CodeForbidden, "agent %q does not exist in namespace %q", p.Agent, p.Namespace)
	}
	now := g.now().UTC()
	timeout := snap.policies.Settings(&policy.Input{Hook: resource.HookToolCallRequest, Namespace: p.Namespace,
		Environment: p.Environment, Agent: p.Agent, Bound: ae.bound}).ApprovalTimeout
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d <= 0 || d > 30*24*time.Hour {
			return nil, apierr.New(apierr.CodeInvalidRequest, "timeout %q is not a duration between 1s and 720h", req.Timeout)
		}
		timeout = d
	}
	name := approvalPrefix + newSuffix(now)
	ap := &resource.Object{
		APIVersion: resource.GroupVersion, Kind: resource.KindApproval,
		Metadata: resource.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: map[string]string{"warden.dev/agent": p.Agent},
			Annotations: map[string]string{AnnotationRequestedBy: p.Subject}},
		Spec: map[string]any{
			"toolCallRef": map[string]any{"name": ""},
			"agentRef":    map[string]any{"name": p.Agent},
			"toolRef":     map[string]any{"name": req.Tool},
			"sideEffect":  req.SideEffect,
			"reason":      req.Reason,
			"expiresAt":   now.Add(timeout).Format(time.RFC3339),
		},
		Status: map[string]any{"status": ApprovalPending},
	}
	var out *resource.Object
	var evs []events.Event
	err = g.rec.do(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		if out, err = tx.ResourceCreate(ctx, ap); err != nil {
			return err
		}
		if err := g.announce(ctx, tx, p.Tenant, out, p.Environment); err != nil {
			return err
		}
		w := &approvalWriter{g: g, tx: tx, tenant: p.Tenant, ns: p.Namespace, now: now}
		w.event(ctx, events.ApprovalRequested, "Approval/"+name, map[string]any{"approval": name, "agent": p.Agent, "tool": req.Tool,
			"sideEffect": req.SideEffect, "reason": req.Reason, "expiresAt": ap.Spec["expiresAt"]})
		evs = w.evs
		return w.err
	})
	if err != nil {
		return nil, errorf("create approval: %w", err)
	}
	g.publish(evs)
	if g.cfg.Queue != nil {
		if err := g.cfg.Queue.Expire(ctx, p.Tenant, p.Namespace, name, now.Add(timeout)); err != nil {
			g.log.ErrorContext(ctx, "schedule approval expiry", "approval", name, "err", err)
		}
	}
	return out, nil
}
