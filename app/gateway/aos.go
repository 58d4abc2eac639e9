package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/aos"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// LabelAOSExecution carries a hash of a function tool call's AOS
// executionId, so that steps/toolCallResult finds the record on any
// replica.
const LabelAOSExecution = "warden.dev/aos-execution"

// Reason codes of hook decisions that are not policy denials.
const (
	ReasonAwaitingApproval = "AwaitingApproval"
	ReasonReplayed         = "IdempotentReplayed"
)

// handleAOS serves POST /v1/hooks/aos: AOS 0.1.0 JSON-RPC, answered by
// this gateway as the Guardian. JSON-RPC errors are answered with HTTP 200,
// as JSON-RPC over HTTP does.
func (g *Gateway) handleAOS(c *fiber.Ctx) error {
	status, body := g.aos.Serve(c.UserContext(), c.Body())
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(body)
}

// governor answers AOS steps with the gateway's pipeline.
type governor struct{ g *Gateway }

// rpcError turns a pipeline error into a decision or a JSON-RPC error:
// refusals (policy, limits, bad input) are deny decisions the agent reads;
// failures of the gateway itself are internal errors.
func denyOf(err error, call string) (aos.Decision, error) {
	e, ok := apierr.As(err)
	if !ok {
		return aos.Decision{}, err
	}
	if e.Code == apierr.CodeInternal || e.Code == apierr.CodeUnavailable {
		return aos.Decision{}, err
	}
	data := map[string]any{"code": e.Code}
	if call != "" {
		data["toolCall"] = call
	}
	if len(e.Details) > 0 {
		data["details"] = e.Details
	}
	return aos.Decision{Decision: aos.Deny, Message: e.Message, ReasonCode: []string{e.Code}, Data: data}, nil
}

func (gv *governor) principal(ctx context.Context) (auth.Principal, error) {
	p, _ := auth.PrincipalFrom(ctx)
	if err := gv.g.requireAgent(p); err != nil {
		return p, err
	}
	return p, nil
}

// normalize turns the json.Number values of AOS inputs into the float64
// values every other input has, so that policies and idempotency keys see
// one form.
func normalize(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func executionLabel(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

// ToolCallRequest governs a function tool's call before the agent runs it:
// the same steps 1 to 6 as POST /v1/tool-calls, recorded as a ToolCall.
func (gv *governor) ToolCallRequest(ctx context.Context, req *aos.Request, p *aos.ToolCallRequestParams) (aos.Decision, error) {
	g := gv.g
	pr, err := gv.principal(ctx)
	if err != nil {
		return denyOf(err, "")
	}
	input, err := aos.InputMap(p.ToolCallRequest.Inputs)
	if err != nil {
		return aos.Decision{}, &aos.Error{Code: aos.CodeInvalidParams, Message: err.Error()}
	}
	if input, err = normalize(input); err != nil {
		return aos.Decision{}, &aos.Error{Code: aos.CodeInvalidParams, Message: err.Error()}
	}
	out, err := g.Call(ctx, pr, CallRequest{Tool: p.ToolCallRequest.ToolID, Input: input, Execution: p.Context.Session.ID,
		hook: true, aosExecution: p.ToolCallRequest.ExecutionID})
	call := ""
	if out != nil && out.Call != nil {
		call = out.Call.Metadata.Name
	}
	if err != nil {
		return denyOf(err, call)
	}
	v, err := viewOf(out.Call)
	if err != nil {
		return aos.Decision{}, err
	}
	key := aosKey(pr.Tenant, pr.Namespace, pr.Agent, p.ToolCallRequest.ExecutionID)
	switch {
	case out.Replayed:
		return gv.replayedDecision(ctx, pr, v, key)
	case v.Status.Phase == PhaseAwaitingApproval:
		ap := ApprovalName(call)
		return aos.Decision{Decision: aos.Deny, ReasonCode: []string{ReasonAwaitingApproval},
			Message: fmt.Sprintf("tool call %s waits for approval %s; run the same call again after an approver decides", call, ap),
			Data:    map[string]any{"toolCall": call, "approval": ap}}, nil
	}
	g.aosCall.put(key, call)
	if out.Modified {
		return modifiedRequest(req, p, v.Spec.Input)
	}
	return aos.Decision{Decision: aos.Allow, Message: "allowed; recorded as " + call, Data: map[string]any{"toolCall": call}}, nil
}

// replayedDecision answers a function call whose key an earlier call
// holds: an approved call that waited is released to this run, once;
// a finished call is not run again (its output is in data).
func (gv *governor) replayedDecision(ctx context.Context, p auth.Principal, v *View, key string) (aos.Decision, error) {
	g := gv.g
	name := v.Obj.Metadata.Name
	if v.Status.Phase == PhaseAwaitingApproval && (v.Spec.Approval.Status == ApprovalApproved || v.Spec.Approval.Status == ApprovalOverridden) {
		released, err := g.release(ctx, p.Tenant, v.Obj)
		if err != nil {
			return aos.Decision{}, err
		}
		if released {
			g.aosCall.put(key, name)
			return aos.Decision{Decision: aos.Allow, Message: fmt.Sprintf("approved by %s; recorded as %s", v.Spec.Approval.ApprovedBy, name),
				Data: map[string]any{"toolCall": name}}, nil
		}
	}
	if v.Status.Phase == PhaseAwaitingApproval {
		return aos.Decision{Decision: aos.Deny, ReasonCode: []string{ReasonAwaitingApproval},
			Message: fmt.Sprintf("tool call %s still waits for approval %s", name, ApprovalName(name)),
			Data:    map[string]any{"toolCall": name, "approval": ApprovalName(name)}}, nil
	}
	data := map[string]any{"toolCall": name, "phase": v.Status.Phase}
	if v.Status.Output != nil {
		data["output"] = v.Status.Output
	}
	return aos.Decision{Decision: aos.Deny, ReasonCode: []string{ReasonReplayed},
		Message: fmt.Sprintf("an identical call (%s, %s) was already made within the idempotency window; it is not run again", name, v.Status.Phase),
		Data:    data}, nil
}

// release moves an approved function call to Running, once (the
// resourceVersion is the precondition).
func (g *Gateway) release(ctx context.Context, tenant string, o *resource.Object) (bool, error) {
	released := false
	err := g.rec.do(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		released = false
		st := cloneMap(o.Status)
		st["phase"], st["startedAt"] = PhaseRunning, timestamp(g.now().UTC())
		_, err := tx.ResourceUpdateStatus(ctx, o.Key(), st, o.Metadata.ResourceVersion)
		if errors.Is(err, store.ErrConflict) {
			return nil
		}
		released = err == nil
		return err
	})
	return released, err
}

// modifiedRequest is a modify decision whose modifiedRequest is the
// request with the inputs policy rewrote.
func modifiedRequest(req *aos.Request, p *aos.ToolCallRequestParams, input map[string]any) (aos.Decision, error) {
	np := *p
	np.ToolCallRequest.Inputs = aos.Inputs(input)
	mr, err := aos.NewRequest(json.RawMessage(req.ID), req.Method, np)
	if err != nil {
		return aos.Decision{}, err
	}
	return aos.Decision{Decision: aos.Modify, Message: "the input was modified by policy", ModifiedRequest: mr}, nil
}

// ToolCallResult governs a function tool's result: steps 8 and 9 on the
// record its steps/toolCallRequest created.
func (gv *governor) ToolCallResult(ctx context.Context, req *aos.Request, p *aos.ToolCallResultParams) (aos.Decision, error) {
	g := gv.g
	pr, err := gv.principal(ctx)
	if err != nil {
		return denyOf(err, "")
	}
	exec := p.ToolCallResult.ExecutionID
	obj, err := g.findAOSCall(ctx, pr, exec)
	if err != nil {
		return denyOf(err, "")
	}
	v, err := viewOf(obj)
	if err != nil {
		return aos.Decision{}, err
	}
	if v.Status.Phase != PhaseRunning {
		return denyOf(apierr.New(apierr.CodeConflict, "tool call %s is %s: its result was already reported or it never ran", obj.Metadata.Name, v.Status.Phase), obj.Metadata.Name)
	}
	ctx, span := g.tracer.Start(ctx, "warden.toolcall.result", trace.WithAttributes(
		attribute.String("warden.toolcall", obj.Metadata.Name), attribute.String("warden.tool", v.Spec.ToolRef.Name),
		attribute.String("warden.tenant", pr.Tenant), attribute.String("warden.namespace", obj.Metadata.Namespace)))
	defer span.End()
	c, _, err := g.callFromRecord(ctx, pr, obj, v, span)
	if err != nil {
		return aos.Decision{}, err
	}
	output, err := normalizeAny(aos.OutputValue(p.ToolCallResult.Result.Outputs))
	if err != nil {
		return aos.Decision{}, &aos.Error{Code: aos.CodeInvalidParams, Message: err.Error()}
	}
	res := &result{output: output, cost: -1}
	if p.ToolCallResult.Result.IsError {
		res.failure = apierr.New(apierr.CodeToolFailed, "function tool %q reported an error", v.Spec.ToolRef.Name)
	}
	c.steps.begin()
	_ = c.timed(ctx, stepResult, func(ctx context.Context) error { return c.checkResult(ctx, res) })
	_ = c.timed(ctx, stepOutput, func(ctx context.Context) error { return c.processOutput(ctx, res) })
	if err := c.step(ctx, "9.record", func(ctx context.Context) error { return c.finish(ctx, res) }); err != nil {
		return aos.Decision{}, err
	}
	name := obj.Metadata.Name
	switch {
	case res.block != nil:
		return denyOf(res.block, name)
	case res.modified || res.report.found():
		outs, err := aos.Outputs(res.output)
		if err != nil {
			return aos.Decision{}, err
		}
		np := *p
		np.ToolCallResult.Result.Outputs = outs
		mr, err := aos.NewRequest(json.RawMessage(req.ID), req.Method, np)
		if err != nil {
			return aos.Decision{}, err
		}
		return aos.Decision{Decision: aos.Modify, Message: "the result was redacted or modified by policy (" + res.report.summary + ")",
			ModifiedRequest: mr, Data: map[string]any{"toolCall": name}}, nil
	}
	return aos.Decision{Decision: aos.Allow, Message: "result recorded in " + name, Data: map[string]any{"toolCall": name}}, nil
}

func normalizeAny(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// findAOSCall finds the record of a function call by its executionId:
// in this process's map, else by label.
func (g *Gateway) findAOSCall(ctx context.Context, p auth.Principal, exec string) (*resource.Object, error) {
	if name, ok := g.aosCall.take(aosKey(p.Tenant, p.Namespace, p.Agent, exec)); ok {
		obj, err := g.read(ctx, p.Tenant, p.Namespace, name)
		if err == nil {
			return obj, nil
		}
	}
	sel, err := resource.ParseSelector(LabelAOSExecution + "=" + executionLabel(exec) + ",warden.dev/agent=" + p.Agent)
	if err != nil {
		return nil, err
	}
	var found []*resource.Object
	err = g.st.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx, store.ListParams{Kind: resource.KindToolCall, Namespace: p.Namespace, Selector: sel, Limit: 10})
		if err != nil {
			return err
		}
		found = res.Items
		return nil
	})
	if err != nil {
		return nil, errorf("find call of execution: %w", err)
	}
	for _, o := range found {
		if o.Metadata.Annotations[AnnotationAOSExecution] == exec {
			return o, nil
		}
	}
	return nil, apierr.New(apierr.CodeNotFound, "no tool call of agent %q has executionId %q: report steps/toolCallRequest first", p.Agent, exec)
}

// callFromRecord rebuilds a call's state from its record and today's
// configuration, for the steps that run after the record exists.
// available is false when the tool or the agent is gone (or the tool's
// schemas no longer compile); the call then carries empty stand-ins.
func (g *Gateway) callFromRecord(ctx context.Context, p auth.Principal, obj *resource.Object, v *View, span trace.Span) (c *call, available bool, err error) {
	snap, err := g.catalog.get(ctx, p.Tenant)
	if err != nil {
		return nil, false, err
	}
	ns := obj.Metadata.Namespace
	c = &call{g: g, p: p, now: g.now().UTC(), span: span, name: obj.Metadata.Name, obj: obj, snap: snap,
		req:   CallRequest{Tool: v.Spec.ToolRef.Name, Execution: v.Spec.ExecutionRef.Name},
		class: v.Spec.SideEffects.Level, key: v.Spec.SideEffects.IdempotencyKey, input: v.Spec.Input,
		approvalRequired: v.Spec.Approval.Required}
	if c.input == nil {
		c.input = map[string]any{}
	}
	if t, err := parseTime(v.Status.StartedAt); err == nil {
		c.now = t
	}
	c.steps.load(obj.Status["steps"])
	te, okTool := snap.tools[nsName{ns, c.req.Tool}]
	ae, okAgent := snap.agents[nsName{ns, v.Spec.AgentRef.Name}]
	available = okTool && okAgent && te.broken == ""
	if !okTool || !okAgent {
		te, ae = &toolEntry{}, &agentEntry{name: v.Spec.AgentRef.Name}
	}
	c.tool, c.agent = te, ae
	c.settings = snap.policies.Settings(c.policyInput(resource.HookToolCallRequest, c.input, nil))
	return c, available, nil
}

// Step governs every other AOS step: it is traced, evaluated by the rules
// at hook step (input is {method, params}) and recorded as a HookDecision
// event. Modify is not defined for these steps; only deny changes the
// answer.
func (gv *governor) Step(ctx context.Context, req *aos.Request) (aos.Decision, error) {
	g := gv.g
	pr, err := gv.principal(ctx)
	if err != nil {
		return denyOf(err, "")
	}
	ctx, span := g.tracer.Start(ctx, "warden.aos.step", trace.WithAttributes(attribute.String("aos.method", req.Method),
		attribute.String("warden.agent", pr.Agent), attribute.String("warden.tenant", pr.Tenant), attribute.String("warden.namespace", pr.Namespace)))
	defer span.End()
	snap, err := g.catalog.get(ctx, pr.Tenant)
	if err != nil {
		return aos.Decision{}, err
	}
	var params map[string]any
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return aos.Decision{}, &aos.Error{Code: aos.CodeInvalidParams, Message: "params must be an object"}
		}
	}
	var bound []string
	if ae, ok := snap.agents[nsName{pr.Namespace, pr.Agent}]; ok {
		bound = ae.bound
	}
	now := g.now().UTC()
	d := snap.policies.Decide(&policy.Input{Hook: resource.HookStep, Namespace: pr.Namespace, Environment: pr.Environment,
		Agent: pr.Agent, Bound: bound, Args: map[string]any{"method": req.Method, "params": params}, Now: now})
	span.AddEvent("aos."+req.Method, trace.WithAttributes(attribute.String("warden.decision", d.Action)))
	ev := events.Event{Type: events.HookDecision, Time: now, Tenant: pr.Tenant, Namespace: pr.Namespace, Subject: "Agent/" + pr.Agent,
		Data: map[string]any{"hook": resource.HookStep, "method": req.Method, "action": d.Action, "policy": d.Ref(), "rule": d.Rule}}
	var evs []events.Event
	err = g.rec.do(ctx, pr.Tenant, func(ctx context.Context, tx store.Tx) error {
		e, err := tx.EventInsert(ctx, ev)
		evs = []events.Event{e}
		return err
	})
	if err != nil {
		return aos.Decision{}, errorf("record hook decision: %w", err)
	}
	g.publish(evs)
	if d.Action == resource.ActionDeny {
		return denyOf(policyDenied(d, resource.HookStep+" "+req.Method), "")
	}
	return aos.Decision{Decision: aos.Allow, Message: ""}, nil
}
