package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// execute runs steps 7 to 9 of a recorded, running call and writes its
// result.
func (g *Gateway) execute(ctx context.Context, c *call) (*Outcome, error) {
	var res *result
	c.steps.begin()
	err := c.timed(ctx, stepInvoke, func(ctx context.Context) error {
		r, err := c.invoke(ctx)
		res = r
		return err
	})
	if err != nil {
		g.log.ErrorContext(ctx, "tool call failed inside the gateway", "toolcall", c.name, "err", err)
		res = &result{failure: apierr.New(apierr.CodeInternal, "the gateway failed to run the tool"), cost: -1}
	}
	_ = c.timed(ctx, stepResult, func(ctx context.Context) error { return c.checkResult(ctx, res) })
	_ = c.timed(ctx, stepOutput, func(ctx context.Context) error { return c.processOutput(ctx, res) })
	fin := c.finish
	if c.deferred {
		fin = c.finishDeferred
	}
	if err := c.step(ctx, "9.record", func(ctx context.Context) error { return fin(ctx, res) }); err != nil {
		return nil, err
	}
	if c.replayed {
		// An identical call recorded first: its answer is this one's.
		c.mark.set(false)
		return c.g.replayed(ctx, c)
	}
	return c.answer(res)
}

// answer turns a finished call into the caller's answer: the record, or
// the error of a failed or blocked call.
func (c *call) answer(res *result) (*Outcome, error) {
	out := c.outcome()
	switch {
	case res.block != nil:
		return out, res.block
	case res.failure != nil:
		e := res.failure
		d := map[string]any{"toolCall": c.name}
		for k, v := range e.Details {
			d[k] = v
		}
		return out, e.WithDetails(d)
	}
	return out, nil
}

// finish writes the result: phase, completion time and the output the agent
// receives; releases the idempotency claim of a failed call; charges a cost
// the tool reported; and records ToolCallCompleted, the toolCallResult
// decision and, for a modified or blocked result, an audit record.
func (c *call) finish(ctx context.Context, res *result) error {
	done := c.g.now().UTC()
	phase, outMap := resultOutput(res)
	var extra []store.UsageCharge
	if res.cost >= 0 {
		_, charges := c.charges()
		// Usage only grows: a tool that reports less than costPerCall
		// keeps the charge made up front.
		if delta := res.cost - c.tool.spec.CostPerCall; delta > 0 {
			for _, ch := range charges {
				ch.Calls, ch.Cost, ch.MaxCalls, ch.MaxCost = 0, delta, 0, 0
				extra = append(extra, ch)
			}
		}
	}
	st := cloneMap(c.obj.Status)
	st["phase"], st["completedAt"], st["output"] = phase, timestamp(done), outMap
	st["steps"] = c.steps.status()
	if _, ok := st["startedAt"]; !ok {
		st["startedAt"] = timestamp(c.now)
	}
	data := c.completedData(res, phase, done)
	// A result that needs no audit record (nothing blocked, modified or
	// found) goes through the store's batched tool-call writes.
	if res.plain() {
		w := &store.CallWrite{
			Update:  &store.StatusUpdate{Stored: c.obj, Status: st},
			Charges: extra,
			Events:  []events.Event{c.newEvent(events.ToolCallCompleted, data)},
		}
		if res.decision.Policy != "" {
			w.Events = append(w.Events, c.newEvent(events.HookDecision, hookDecisionData("toolCallResult", res.decision, false)))
		}
		if releases(phase) {
			w.Release = &store.IdempotencyRelease{Namespace: c.p.Namespace, Key: c.key, Call: c.name}
		}
		if _, err := w.Prepare(done); err != nil {
			return errorf("record result of %s: %w", c.name, err)
		}
		if err := c.g.rec.call(ctx, c.p.Tenant, w, false); err != nil {
			return errorf("record result of %s: %w", c.name, err)
		}
		// A conflict (the record changed since this executor read it)
		// falls through to the general path, which writes over it.
		if w.Err == nil {
			c.g.publish(w.Inserted)
			c.obj = w.Updated
			c.g.waiters.wake(c.p.Tenant, c.p.Namespace+"/"+c.name)
			return nil
		}
	}
	var obj *resource.Object
	var evs []events.Event
	err := c.g.rec.do(ctx, c.p.Tenant, func(ctx context.Context, tx store.Tx) error {
		// Only this executor writes a running call (cancel refuses it), so
		// the status it claimed is the stored one.
		key := c.obj.Key()
		var err error
		if obj, err = tx.ResourceUpdateStatus(ctx, key, st, ""); err != nil {
			return err
		}
		// A blocked result still ran the tool: its side effect happened,
		// so the claim stays and a retry returns this record.
		if res.block == nil && releases(phase) {
			if err := tx.IdempotencyRelease(ctx, c.p.Namespace, c.key, c.name); err != nil {
				return err
			}
		}
		if len(extra) > 0 {
			if _, _, err := tx.UsageCharge(ctx, extra); err != nil {
				return err
			}
		}
		w := &txWriter{c: c, tx: tx}
		w.event(ctx, events.ToolCallCompleted, data)
		hd := hookDecisionData("toolCallResult", res.decision, res.modified)
		if res.report.found() {
			hd["findings"] = res.report.counts
		}
		if res.block != nil {
			hd["action"] = resource.ActionDeny
			w.event(ctx, events.PolicyDenied, map[string]any{"tool": c.req.Tool, "agent": c.p.Agent, "hook": "toolCallResult",
				"code": res.block.Code, "rule": res.block.Details["rule"]})
			w.audit(ctx, "toolcalls/result", "ToolCall/"+c.name, audit.OutcomeDenied, res.decision.Ref(), res.block.Code+": "+res.block.Message)
		} else if res.modified || res.report.found() {
			w.audit(ctx, "toolcalls/modify", "ToolCall/"+c.name, audit.OutcomeAllowed, res.decision.Ref(), "result modified at hook toolCallResult")
		}
		if res.decision.Policy != "" || res.modified || res.block != nil || res.report.found() {
			w.event(ctx, events.HookDecision, hd)
		}
		evs = w.evs
		return w.err
	})
	if err != nil {
		return errorf("record result of %s: %w", c.name, err)
	}
	c.g.publish(evs)
	c.obj = obj
	c.g.waiters.wake(c.p.Tenant, c.p.Namespace+"/"+c.name)
	return nil
}

// plain reports whether the result needs no audit record: nothing was
// blocked, modified or found in it.
func (r *result) plain() bool {
	return r.block == nil && !r.modified && !r.report.found()
}

// resultOutput returns the phase a result ends its call in and the output
// the record keeps.
func resultOutput(res *result) (string, map[string]any) {
	phase, output := PhaseSucceeded, res.output
	switch {
	case res.block != nil:
		phase, output = PhaseDenied, errorOutput(res.block.Code, res.block.Message, res.block.Details)
	case res.failure != nil:
		phase = PhaseFailed
		eo := errorOutput(res.failure.Code, res.failure.Message, res.failure.Details)
		if res.output != nil {
			eo["result"] = res.output
		}
		output = eo
	}
	outMap, ok := output.(map[string]any)
	if !ok {
		outMap = map[string]any{"result": output}
	}
	if outMap == nil {
		outMap = map[string]any{}
	}
	return phase, outMap
}

// completedData is the data of the call's ToolCallCompleted event.
func (c *call) completedData(res *result, phase string, done time.Time) map[string]any {
	data := map[string]any{"tool": c.req.Tool, "agent": c.p.Agent, "phase": phase, "durationMs": done.Sub(c.now).Milliseconds()}
	if res.failure != nil {
		data["code"] = res.failure.Code
	}
	if res.report.found() {
		data["findings"] = res.report.counts
	}
	return data
}

// finishDeferred writes the record of a call recorded with its result
// (recordsWithResult): in one write, the claim, the finished record, the
// release of a failed call's claim and the events of both the request and
// the result, durable before the agent is answered. When the claim is held
// by a call recorded in the meantime (an identical call that raced this
// one), nothing of this call is kept and the caller is answered with that
// call, replayed. A result that needs audit records, or a claim whose
// holder's record is gone, takes the two writes of any other call.
func (c *call) finishDeferred(ctx context.Context, res *result) error {
	if res.plain() {
		done, err := c.writeOnce(ctx, res)
		if err != nil || done {
			return err
		}
	}
	limits, charges := c.charges()
	if err := c.write(ctx, limits, charges); err != nil {
		return err
	}
	if c.replayed {
		return nil
	}
	return c.finish(ctx, res)
}

// writeOnce is finishDeferred's one write. done is false, with nothing
// written, when the claim is held by a call whose record is gone.
func (c *call) writeOnce(ctx context.Context, res *result) (done bool, err error) {
	end := c.g.now().UTC()
	phase, outMap := resultOutput(res)
	o := c.newRecord()
	o.Status = map[string]any{"phase": phase, "startedAt": timestamp(c.now), "completedAt": timestamp(end),
		"output": outMap, "steps": c.steps.status()}
	evs := make([]events.Event, 0, 4)
	evs = append(evs, c.newEvent(events.ToolCallRequested, c.requestedData()))
	if c.guardianActed() {
		evs = append(evs, c.newEvent(events.HookDecision, hookDecisionData(resource.HookToolCallRequest, c.decision, c.modified)))
	}
	evs = append(evs, c.newEvent(events.ToolCallCompleted, c.completedData(res, phase, end)))
	if res.decision.Policy != "" {
		evs = append(evs, c.newEvent(events.HookDecision, hookDecisionData("toolCallResult", res.decision, false)))
	}
	cl := c.claim()
	w := &store.CallWrite{Claim: &cl, Creates: []*resource.Object{o}, Events: evs}
	if releases(phase) {
		w.Release = &store.IdempotencyRelease{Namespace: c.p.Namespace, Key: c.key, Call: c.name}
	}
	// Created at the request, as a record written before the tool ran.
	if _, err := w.Prepare(c.now); err != nil {
		return false, errorf("record tool call: %w", err)
	}
	if err := c.g.rec.call(ctx, c.p.Tenant, w, false); err != nil {
		return false, errorf("record tool call: %w", err)
	}
	if w.Holder != "" {
		holder, err := c.g.read(ctx, c.p.Tenant, c.p.Namespace, w.Holder)
		if e, ok := apierr.As(err); ok && e.Code == apierr.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		c.obj, c.replayed, c.name = holder, true, holder.Metadata.Name
		return true, nil
	}
	c.g.publish(w.Inserted)
	c.obj = w.Created[0]
	return true, nil
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// replayed answers a call deduplicated against an earlier one: after
// waiting (up to the request's wait, default 30s) for the earlier call to
// finish when it is still running.
func (g *Gateway) replayed(ctx context.Context, c *call) (*Outcome, error) {
	wait := DefaultWait
	if c.req.Wait != "" {
		if d, err := time.ParseDuration(c.req.Wait); err == nil {
			wait = min(max(d, 0), MaxWait)
		}
	}
	obj, err := g.waitFor(ctx, c.p.Tenant, c.p.Namespace, c.name, wait, func(phase string) bool {
		return Finished(phase) || phase == PhaseAwaitingApproval
	})
	if err != nil {
		return nil, err
	}
	c.obj = obj
	return c.outcome(), nil
}

// awaitApproval answers a call that waits for approval: at once, or after
// the request's wait when the approver decides within it.
func (g *Gateway) awaitApproval(ctx context.Context, c *call) (*Outcome, error) {
	ap := ApprovalName(c.name)
	if g.cfg.Queue != nil {
		at := c.now.Add(c.settings.ApprovalTimeout)
		if err := g.cfg.Queue.Expire(ctx, c.p.Tenant, c.p.Namespace, ap, at); err != nil {
			// The approval still expires when it is next read or
			// decided: the record carries expiresAt.
			g.log.ErrorContext(ctx, "schedule approval expiry", "approval", ap, "err", err)
		}
	}
	var wait time.Duration
	if c.req.Wait != "" {
		if d, err := time.ParseDuration(c.req.Wait); err == nil {
			wait = min(max(d, 0), MaxWait)
		}
	}
	if wait == 0 {
		return c.outcome(), nil
	}
	obj, err := g.waitFor(ctx, c.p.Tenant, c.p.Namespace, c.name, wait, Finished)
	if err != nil {
		return nil, err
	}
	c.obj = obj
	return c.outcome(), approvalRefusal(obj)
}

// approvalRefusal is the error a caller that waited on a call gets when
// the call ended because its approval was denied or expired: the
// documented ApprovalDenied (403), with the call's record named in its
// details. nil for any other call.
func approvalRefusal(obj *resource.Object) error {
	phase, _ := obj.Status["phase"].(string)
	if phase != PhaseDenied && phase != PhaseExpired {
		return nil
	}
	out, _ := obj.Status["output"].(map[string]any)
	e, _ := out["error"].(map[string]any)
	if code, _ := e["code"].(string); code != apierr.CodeApprovalDenied {
		return nil
	}
	msg, _ := e["message"].(string)
	details := map[string]any{"toolCall": obj.Metadata.Name, "phase": phase}
	if d, ok := e["details"].(map[string]any); ok {
		for k, v := range d {
			details[k] = v
		}
	}
	return apierr.New(apierr.CodeApprovalDenied, "%s", msg).WithDetails(details)
}

// waitFor reads a call until done(phase) holds, the wait passes or ctx
// ends, and returns the last read.
func (g *Gateway) waitFor(ctx context.Context, tenant, ns, name string, wait time.Duration, done func(string) bool) (*resource.Object, error) {
	ch, remove := g.waiters.add(tenant, ns+"/"+name)
	defer remove()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		obj, err := g.read(ctx, tenant, ns, name)
		if err != nil {
			return nil, err
		}
		phase, _ := obj.Status["phase"].(string)
		if done(phase) {
			return obj, nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return obj, nil
		case <-ctx.Done():
			return obj, nil
		}
	}
}

// read returns one ToolCall record.
func (g *Gateway) read(ctx context.Context, tenant, ns, name string) (*resource.Object, error) {
	var obj *resource.Object
	err := g.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		obj, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindToolCall, Namespace: ns, Name: name})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(apierr.CodeNotFound, "tool call %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, errorf("read tool call %s: %w", name, err)
	}
	return obj, nil
}
