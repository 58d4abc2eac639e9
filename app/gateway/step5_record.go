package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Limit scopes of Policy spec.limits.
const (
	ScopeTool      = "tool"
	ScopeAgent     = "agent"
	ScopeNamespace = "namespace"
)

// record is step 5: in one transaction, the idempotency claim (or the
// earlier call that holds it), the usage charges of every bound limit, the
// ToolCall record and, when approval is needed, the Approval record, plus
// their events and audit records. A denied call is recorded too, with
// phase Denied.
func (c *call) record(ctx context.Context) error {
	c.name = callPrefix + newSuffix(c.now)
	if c.approvalRequired && c.denial == nil {
		// The wait for the approver starts at the record write.
		c.steps.pause(c.g.now().UTC())
	}
	if c.denial != nil {
		return c.recordDenied(ctx, c.denial, events.PolicyDenied)
	}
	limits, charges := c.charges()
	if c.recordsWithResult(limits) {
		c.deferred = true
		return c.readClaim(ctx)
	}
	return c.write(ctx, limits, charges)
}

// write writes the call's record before its tool runs: the claim, the
// charges, the record and its events (see record).
func (c *call) write(ctx context.Context, limits []policy.Limit, charges []store.UsageCharge) error {
	if c.batchable(limits) {
		done, err := c.recordBatched(ctx, charges)
		if err != nil || done {
			return err
		}
	}
	var (
		obj      *resource.Object
		holder   *resource.Object
		denial   *apierr.Error
		warnings []string
		evs      []events.Event
	)
	err := c.g.rec.do(ctx, c.p.Tenant, func(ctx context.Context, tx store.Tx) error {
		obj, holder, denial, warnings, evs = nil, nil, nil, nil, nil
		h, err := tx.IdempotencyClaim(ctx, c.claim())
		if err != nil {
			return err
		}
		if h != "" && h != c.name {
			o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: c.p.Namespace, Name: h})
			switch {
			case err == nil:
				holder = o
				return nil
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			// The holder's record is gone (deleted by an operator): the
			// claim protects nothing any more.
			if _, err := tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: c.p.Namespace, Key: c.key, Call: c.name, Now: c.now, Force: true}); err != nil {
				return err
			}
		}
		totals, exceeded, err := tx.UsageCharge(ctx, charges)
		if err != nil {
			return err
		}
		w := &txWriter{c: c, tx: tx}
		if exceeded >= 0 {
			denial = limitDenied(limits[exceeded], charges[exceeded], totals[exceeded], c)
			w.event(ctx, events.BudgetExceeded, limitEventData(limits[exceeded], totals[exceeded], "error"))
			if err := w.deniedWith(ctx, denial, ""); err != nil {
				return err
			}
			if err := tx.IdempotencyRelease(ctx, c.p.Namespace, c.key, c.name); err != nil {
				return err
			}
			obj, evs = w.obj, w.evs
			return w.err
		}
		for i, l := range limits {
			if l.Hard() || !over(l, totals[i]) {
				continue
			}
			warnings = append(warnings, fmt.Sprintf("soft limit %s spec.limits[%d] (%s %s): %s", l.Policy, l.Index, l.Scope, l.Match, usageText(l, totals[i])))
			w.event(ctx, events.BudgetExceeded, limitEventData(l, totals[i], "warning"))
		}
		if obj, err = tx.ResourceCreate(ctx, c.newRecord()); err != nil {
			return err
		}
		w.event(ctx, events.ToolCallRequested, c.requestedData())
		if c.guardianActed() {
			w.event(ctx, events.HookDecision, hookDecisionData(resource.HookToolCallRequest, c.decision, c.modified))
		}
		if c.modified {
			w.audit(ctx, "toolcalls/modify", "ToolCall/"+c.name, audit.OutcomeAllowed, c.decision.Ref(), "input modified at hook toolCallRequest")
		}
		if c.approvalRequired {
			ap := newApproval(c, c.now.Add(c.settings.ApprovalTimeout))
			created, err := tx.ResourceCreate(ctx, ap)
			if err != nil {
				return err
			}
			if err := c.g.announce(ctx, tx, c.p.Tenant, created, c.p.Environment); err != nil {
				return err
			}
			w.event(ctx, events.ApprovalRequested, c.approvalData(ap))
		}
		evs = w.evs
		return w.err
	})
	if err != nil {
		return errorf("record tool call: %w", err)
	}
	c.g.publish(evs)
	c.warnings = warnings
	switch {
	case holder != nil:
		c.obj, c.replayed, c.name = holder, true, holder.Metadata.Name
	case denial != nil:
		c.obj, c.denial = obj, denial
	default:
		c.obj = obj
	}
	return nil
}

// batchable reports whether the record of this call can go through the
// store's batched tool-call writes: when it needs no audit record (the
// input was not modified) and every limit is hard (a soft limit's warning
// event depends on the counter's new value).
func (c *call) batchable(limits []policy.Limit) bool {
	// A paused call's notifications are enqueued in the transaction
	// that creates its Approval, which the batched writes do not offer.
	if c.modified || (c.approvalRequired && c.g.cfg.Announcer != nil) {
		return false
	}
	for _, l := range limits {
		if !l.Hard() {
			return false
		}
	}
	return true
}

// recordBatched is record through store.CallWriter: on Postgres the
// transaction of a whole batch of calls is one round trip. It returns
// done=false, having written nothing that lasts, when the call needs the
// general path: a hard limit refused the charge (the general path records
// the denial) or the record of the call holding the key is gone.
func (c *call) recordBatched(ctx context.Context, charges []store.UsageCharge) (done bool, err error) {
	o := c.newRecord()
	creates := []*resource.Object{o}
	evs := []events.Event{c.newEvent(events.ToolCallRequested, c.requestedData())}
	if c.guardianActed() {
		evs = append(evs, c.newEvent(events.HookDecision, hookDecisionData(resource.HookToolCallRequest, c.decision, c.modified)))
	}
	if c.approvalRequired {
		ap := newApproval(c, c.now.Add(c.settings.ApprovalTimeout))
		creates = append(creates, ap)
		evs = append(evs, c.newEvent(events.ApprovalRequested, c.approvalData(ap)))
	}
	cl := c.claim()
	w := &store.CallWrite{
		Claim:   &cl,
		Charges: charges,
		Creates: creates,
		Events:  evs,
	}
	// The encoding happens here, in parallel with other calls, rather
	// than in the writer that serializes the batch.
	if _, err := w.Prepare(c.now); err != nil {
		return false, errorf("record tool call: %w", err)
	}
	if err := c.g.rec.call(ctx, c.p.Tenant, w, c.committedEnough()); err != nil {
		return false, errorf("record tool call: %w", err)
	}
	switch {
	case w.Holder != "":
		holder, err := c.g.read(ctx, c.p.Tenant, c.p.Namespace, w.Holder)
		if e, ok := apierr.As(err); ok && e.Code == apierr.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		c.obj, c.replayed, c.name = holder, true, holder.Metadata.Name
		return true, nil
	case w.Exceeded >= 0:
		return false, nil
	}
	c.g.publish(w.Inserted)
	c.obj = w.Created[0]
	return true, nil
}

// recordsWithResult reports whether the call is recorded once, with its
// result, after its tool ran, instead of before it and again after: on a
// store whose read of a claim is cheap (store.CallWriter.ClaimReadFirst),
// a read-only call the gateway runs itself, with nothing to wait for
// (committedEnough), no usage limit to charge before it runs (a hard cap
// must refuse the call before the tool is reached, a soft one warns with
// the counter's new value) and no audit record of a modified input. Its
// tool has no side effect, so running it before the claim is taken
// repeats nothing a retry would not: a repeated key is found by
// readClaim before the tool runs, and of two identical first calls
// racing, both may read, one record wins, and the other call answers
// with it (finishDeferred).
func (c *call) recordsWithResult(limits []policy.Limit) bool {
	return c.g.st.ClaimReadFirst() && c.committedEnough() && len(limits) == 0 && !c.modified
}

// readClaim is step 5 of a call recorded with its result: one read of the
// idempotency claim (store.CallWriter.ClaimHolder, one round trip). A call that holds the key (within the window, not
// released) is answered instead, as when its claim stops a record; a key
// whose holder's record is gone is taken over by the write.
func (c *call) readClaim(ctx context.Context) error {
	h, err := c.g.st.ClaimHolder(ctx, c.p.Tenant, c.claim())
	if err != nil {
		return errorf("read idempotency claim: %w", err)
	}
	if h == "" {
		return nil
	}
	holder, err := c.g.read(ctx, c.p.Tenant, c.p.Namespace, h)
	if e, ok := apierr.As(err); ok && e.Code == apierr.CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	c.obj, c.replayed, c.name = holder, true, holder.Metadata.Name
	return nil
}

// claim is the call's idempotency claim.
func (c *call) claim() store.IdempotencyClaim {
	return store.IdempotencyClaim{
		Namespace: c.p.Namespace, Key: c.key, Call: c.name, Now: c.now, Window: c.settings.IdempotencyWindow, Force: c.req.Force,
	}
}

// committedEnough reports whether the call's record may be acted on once
// it is committed, before it is durable: a read-only call that the gateway
// runs itself and that answers nobody before its result is recorded. A
// side-effecting tool must never run on a claim a crash could take back
// (it would run again on the retry), the 202 of a call awaiting approval
// and the decision a function tool's agent acts on are answers, and a
// read has nothing to protect: its result is written durably, which makes
// this record durable too, before the agent sees it.
func (c *call) committedEnough() bool {
	return c.class == resource.SideEffectReadOnly && !c.approvalRequired && !c.req.hook
}

// guardianActed reports whether the request's HookDecision is recorded:
// when the Guardian did something (a rule fired, the input changed or
// approval is required). A plain allow with no rule firing is in
// ToolCallRequested already.
func (c *call) guardianActed() bool {
	return c.decision.Policy != "" || c.modified || c.approvalRequired
}

// newRecord returns the call's new ToolCall record: Running, or
// AwaitingApproval with a pending approval.
func (c *call) newRecord() *resource.Object {
	o := newToolCall(c.name, c.p.Namespace, c.p.Environment, c.req.Execution, c.p.Agent, c.req.Tool, c.class, c.key, c.input,
		c.approvalRequired, ApprovalNotRequired)
	c.annotate(o)
	if c.approvalRequired {
		o.Spec["approval"].(map[string]any)["status"] = ApprovalPending
		o.Status = map[string]any{"phase": PhaseAwaitingApproval}
	} else {
		o.Status = map[string]any{"phase": PhaseRunning, "startedAt": timestamp(c.now)}
	}
	if c.approvalRequired || c.req.hook {
		// The call's result is written by another request (a resume
		// or the agent's toolCallResult), which reads the steps so far
		// from here. A call this request finishes writes them then.
		o.Status["steps"] = c.steps.status()
	}
	return o
}

func (c *call) requestedData() map[string]any {
	return map[string]any{
		"tool": c.req.Tool, "agent": c.p.Agent, "environment": c.p.Environment, "sideEffect": c.class,
		"idempotencyKey": c.key, "approvalRequired": c.approvalRequired, "force": c.req.Force,
	}
}

func (c *call) approvalData(ap *resource.Object) map[string]any {
	return map[string]any{
		"approval": ap.Metadata.Name, "toolCall": c.name, "tool": c.req.Tool, "agent": c.p.Agent,
		"sideEffect": c.class, "reason": c.approvalReason, "expiresAt": ap.Spec["expiresAt"],
	}
}

// newEvent returns an event about the call.
func (c *call) newEvent(typ string, data map[string]any) events.Event {
	return events.Event{Type: typ, Time: c.now, Tenant: c.p.Tenant, Namespace: c.p.Namespace, Subject: "ToolCall/" + c.name, Data: data}
}

// annotate adds the call's optional annotations.
func (c *call) annotate(o *resource.Object) {
	if c.req.aosExecution != "" {
		o.Metadata.Annotations[AnnotationAOSExecution] = c.req.aosExecution
		o.Metadata.Labels[LabelAOSExecution] = executionLabel(c.req.aosExecution)
	}
	if c.req.replayOf != "" {
		o.Metadata.Annotations[AnnotationReplayOf] = c.req.replayOf
	}
	// Written with the record itself, so a call is never without it once
	// tracing is on; a no-op tracer has no trace id to name.
	if c.span == nil {
		return
	}
	if sc := c.span.SpanContext(); sc.HasTraceID() {
		o.Metadata.Annotations[AnnotationTraceID] = sc.TraceID().String()
	}
}

// recordDenied records a call the Guardian refused.
func (c *call) recordDenied(ctx context.Context, denial *apierr.Error, eventType string) error {
	var obj *resource.Object
	var evs []events.Event
	err := c.g.rec.do(ctx, c.p.Tenant, func(ctx context.Context, tx store.Tx) error {
		w := &txWriter{c: c, tx: tx}
		if err := w.deniedWith(ctx, denial, eventType); err != nil {
			return err
		}
		obj, evs = w.obj, w.evs
		return w.err
	})
	if err != nil {
		return errorf("record denied tool call: %w", err)
	}
	c.g.publish(evs)
	c.obj = obj
	return nil
}

// txWriter collects the events of one write and remembers its first error.
type txWriter struct {
	c   *call
	tx  store.Tx
	evs []events.Event
	obj *resource.Object
	err error
}

func (w *txWriter) event(ctx context.Context, typ string, data map[string]any) {
	if w.err != nil {
		return
	}
	ev, err := w.tx.EventInsert(ctx, w.c.newEvent(typ, data))
	if err != nil {
		w.err = err
		return
	}
	w.evs = append(w.evs, ev)
}

func (w *txWriter) audit(ctx context.Context, verb, res, outcome, pol, reason string) {
	if w.err != nil {
		return
	}
	if pol == "" {
		pol = authz.EffectivePolicy(ctx, w.c.p)
	}
	_, w.err = w.tx.AuditInsert(ctx, audit.Record{
		Time: w.c.now, Tenant: w.c.p.Tenant, Actor: w.c.p.Subject, Verb: verb, Namespace: w.c.p.Namespace,
		Resource: res, Outcome: outcome, Policy: pol, Reason: reason,
	})
}

// deniedWith creates the Denied record, its events and its audit record.
func (w *txWriter) deniedWith(ctx context.Context, denial *apierr.Error, eventType string) error {
	c := w.c
	o := newToolCall(c.name, c.p.Namespace, c.p.Environment, c.req.Execution, c.p.Agent, c.req.Tool, c.class, c.key, c.input,
		c.approvalRequired, ApprovalNotRequired)
	c.annotate(o)
	o.Status = map[string]any{"phase": PhaseDenied, "completedAt": timestamp(c.now), "output": errorOutput(denial.Code, denial.Message, denial.Details)}
	steps := c.steps
	steps.ran &^= 1 << stepApproval // a denied call never waited
	steps.waitFrom = time.Time{}
	o.Status["steps"] = steps.status()
	obj, err := w.tx.ResourceCreate(ctx, o)
	if err != nil {
		return err
	}
	w.obj = obj
	pol := ""
	if id, _ := denial.Details["policyId"].(string); id != "" {
		pol = policy.Ref(id, fmt.Sprint(denial.Details["policyVersion"]))
	}
	if eventType != "" {
		w.event(ctx, eventType, map[string]any{"tool": c.req.Tool, "agent": c.p.Agent, "hook": resource.HookToolCallRequest,
			"code": denial.Code, "policy": pol, "rule": denial.Details["rule"]})
	}
	w.event(ctx, events.HookDecision, map[string]any{"hook": resource.HookToolCallRequest, "action": resource.ActionDeny, "policy": pol,
		"rule": denial.Details["rule"]})
	w.audit(ctx, "toolcalls/create", "ToolCall/"+c.name, audit.OutcomeDenied, pol, denial.Code+": "+denial.Message)
	return w.err
}

func hookDecisionData(hook string, d policy.Decision, modified bool) map[string]any {
	return map[string]any{"hook": hook, "action": d.Action, "policy": d.Ref(), "rule": d.Rule, "modified": modified}
}

// newApproval builds the Approval record of a paused call.
func newApproval(c *call, expires time.Time) *resource.Object {
	ap := &resource.Object{
		APIVersion: resource.GroupVersion,
		Kind:       resource.KindApproval,
		Metadata: resource.ObjectMeta{
			Name: ApprovalName(c.name), Namespace: c.p.Namespace,
			Labels:      map[string]string{"warden.dev/agent": c.p.Agent, "warden.dev/tool": c.req.Tool},
			Annotations: map[string]string{AnnotationRequestedBy: c.p.Subject},
		},
		Spec: map[string]any{
			"toolCallRef": map[string]any{"name": c.name},
			"agentRef":    map[string]any{"name": c.p.Agent},
			"toolRef":     map[string]any{"name": c.req.Tool},
			"sideEffect":  c.class,
			"reason":      c.approvalReason,
			"expiresAt":   expires.UTC().Format(time.RFC3339),
		},
		Status: map[string]any{"status": ApprovalPending},
	}
	if c.input != nil {
		ap.Spec["input"] = c.input
	}
	if c.decision.Action == resource.ActionRequireApproval && c.decision.Policy != "" {
		ap.Spec["policy"], ap.Spec["rule"] = c.decision.Ref(), c.decision.Rule
	}
	return ap
}

// charges returns the limits that apply to this call and their charges.
func (c *call) charges() ([]policy.Limit, []store.UsageCharge) {
	var limits []policy.Limit
	var charges []store.UsageCharge
	for _, l := range c.settings.Limits {
		var subject string
		switch l.Scope {
		case ScopeTool:
			subject = c.req.Tool
		case ScopeAgent:
			subject = c.p.Agent
		case ScopeNamespace:
			subject = c.p.Namespace
		default:
			continue
		}
		if l.Match != "*" && l.Match != subject || l.MaxCalls == 0 && l.MaxCost == 0 {
			// Not this call's, or a token budget, which only the model
			// router counts.
			continue
		}
		name, _ := splitRef(l.Policy)
		ch := store.UsageCharge{
			UsageKey: store.UsageKey{
				Key:         c.p.Namespace + "/" + name + "#" + strconv.Itoa(l.Index) + "/" + l.Scope + "=" + subject,
				WindowStart: c.now.Truncate(l.Duration),
			},
			Calls: 1, Cost: c.tool.spec.CostPerCall,
		}
		if l.Hard() {
			ch.MaxCalls, ch.MaxCost = l.MaxCalls, l.MaxCost
		}
		limits = append(limits, l)
		charges = append(charges, ch)
	}
	return limits, charges
}

func over(l policy.Limit, t store.UsageTotal) bool {
	return l.MaxCalls > 0 && t.Calls > l.MaxCalls || l.MaxCost > 0 && t.Cost > l.MaxCost
}

func usageText(l policy.Limit, t store.UsageTotal) string {
	if l.MaxCalls > 0 && t.Calls > l.MaxCalls {
		return fmt.Sprintf("%d calls, limit %d per %s", t.Calls, l.MaxCalls, l.Duration)
	}
	return fmt.Sprintf("cost %.4f USD, limit %.4f per %s", t.Cost, l.MaxCost, l.Duration)
}

// limitDenied is the error of a hard cap: RateLimited when the call count
// is capped, BudgetExceeded when the cost is.
func limitDenied(l policy.Limit, ch store.UsageCharge, t store.UsageTotal, c *call) *apierr.Error {
	code, what := apierr.CodeBudgetExceeded, fmt.Sprintf("cost %.4f + %.4f USD exceeds the budget of %.4f USD per %s", t.Cost, ch.Cost, l.MaxCost, l.Duration)
	if l.MaxCalls > 0 && t.Calls+ch.Calls > l.MaxCalls {
		code, what = apierr.CodeRateLimited, fmt.Sprintf("%d calls per %s reached", l.MaxCalls, l.Duration)
	}
	name, version := splitRef(l.Policy)
	retry := ch.WindowStart.Add(l.Duration).Sub(c.now)
	return apierr.New(code, "hard limit of policy %s spec.limits[%d] (%s %s) at hook toolCallRequest: %s", l.Policy, l.Index, l.Scope, l.Match, what).
		WithDetails(map[string]any{"policyId": name, "policyVersion": version, "limit": l.Index, "scope": l.Scope, "match": l.Match,
			"window": l.Duration.String(), "retryAfterSeconds": int64(retry.Seconds()) + 1})
}

func limitEventData(l policy.Limit, t store.UsageTotal, severity string) map[string]any {
	return map[string]any{"severity": severity, "policy": l.Policy, "limit": l.Index, "scope": l.Scope, "match": l.Match,
		"window": l.Duration.String(), "mode": map[bool]string{true: "hard", false: "soft"}[l.Hard()],
		"calls": t.Calls, "cost": t.Cost, "maxCalls": l.MaxCalls, "maxCost": l.MaxCost}
}

// auditRefusal records a call refused before it had a record (unknown
// tool, unknown agent, unreferenced tool).
func (g *Gateway) auditRefusal(ctx context.Context, p auth.Principal, verb, res, pol string, e *apierr.Error) {
	if pol == "" {
		pol = authz.EffectivePolicy(ctx, p)
	}
	rec := audit.Record{Time: g.now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: verb, Namespace: p.Namespace,
		Resource: res, Outcome: audit.OutcomeDenied, Policy: pol, Reason: e.Code + ": " + e.Message}
	err := g.rec.do(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	})
	if err != nil {
		g.log.ErrorContext(ctx, "audit refused tool call", "err", err)
	}
}
