package gateway

import (
	"context"
	"fmt"
	"slices"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
)

// evaluate is step 4, the Guardian: the policy rules bound to the agent at
// hook toolCallRequest, then the external Guardian Agents those policies
// name. The most restrictive decision wins (deny > require_approval >
// modify > allow); modify decisions apply in evaluation order. A force
// re-execution needs a bound policy with idempotency.allowForce. Rate
// limits and budgets are charged in step 5, atomically with the record.
func (c *call) evaluate(ctx context.Context) error {
	in := c.policyInput(resource.HookToolCallRequest, c.input, nil)
	set := c.snap.policies
	c.settings = set.Settings(in)
	c.decision = policy.Decision{Action: resource.ActionAllow}
	input := c.input
	for _, d := range set.Evaluate(in) {
		if policy.MoreRestrictive(d.Action, c.decision.Action) || c.decision.Policy == "" && d.Action == c.decision.Action {
			c.decision = d
		}
		switch d.Action {
		case resource.ActionDeny:
			c.deny(policyDenied(d, resource.HookToolCallRequest))
			return nil
		case resource.ActionModify:
			out, err := set.Modify(d, in, input)
			if err != nil {
				c.deny(policyDenied(policy.Decision{Action: resource.ActionDeny, Policy: d.Policy, Version: d.Version, Rule: d.Rule,
					Message: "the modify of this rule failed, so the call is denied (fail closed): " + err.Error()}, resource.HookToolCallRequest))
				return nil
			}
			input, c.modified = out, true
		case resource.ActionRequireApproval:
			if !c.approvalRequired {
				c.approvalRequired = true
				c.approvalReason = fmt.Sprintf("policy %s rule %s requires approval", d.Ref(), d.Rule)
				if d.Message != "" {
					c.approvalReason += ": " + d.Message
				}
			}
		}
	}
	for _, gd := range c.settings.Guardians {
		if !slices.Contains(gd.Hooks, resource.HookToolCallRequest) {
			continue
		}
		dec, err := c.g.guardian(ctx, gd, resource.HookToolCallRequest, c.guardianCall(input, nil, false))
		if err != nil {
			c.g.log.WarnContext(ctx, "guardian failed", "guardian", gd.URL, "policy", gd.Policy, "failOpen", gd.FailOpen, "err", err)
		}
		switch dec.Action {
		case resource.ActionDeny:
			c.deny(guardianDenied(gd, dec.Message, resource.HookToolCallRequest))
			return nil
		case resource.ActionModify:
			if dec.Input != nil {
				input, c.modified = dec.Input, true
			}
		}
	}
	if c.req.Force && c.settings.ForcePolicy == "" {
		c.deny(apierr.New(apierr.CodePolicyDenied,
			"force re-execution denied at hook toolCallRequest: no policy bound to agent %q sets idempotency.allowForce", c.p.Agent).
			WithDetails(map[string]any{"policyId": "", "policyVersion": "", "rule": "idempotency.allowForce"}))
		return nil
	}
	c.input = input
	return nil
}

// policyInput is the CEL input of a hook for this call.
func (c *call) policyInput(hook string, input map[string]any, output any) *policy.Input {
	return &policy.Input{
		Hook: hook, Namespace: c.p.Namespace, Environment: c.p.Environment, Agent: c.p.Agent, Bound: c.agent.bound,
		Tool: policy.ToolRef{Name: c.req.Tool, SideEffect: c.class}, Args: input, Output: output, Now: c.now,
	}
}

func (c *call) guardianCall(input map[string]any, output any, isError bool) *GuardianCall {
	return &GuardianCall{Tenant: c.p.Tenant, Namespace: c.p.Namespace, Environment: c.p.Environment, Agent: c.p.Agent,
		Call: c.name, Tool: c.req.Tool, Execution: c.req.Execution, Input: input, Output: output, IsError: isError}
}

// deny records that the Guardian refused the call; step 5 records it.
func (c *call) deny(err *apierr.Error) { c.denial = err }

// policyDenied is the PolicyDenied error of a deny decision: the message
// names <policy>@<version> and the hook, the details carry policyId,
// policyVersion and rule.
func policyDenied(d policy.Decision, hook string) *apierr.Error {
	msg := fmt.Sprintf("denied by policy %s at hook %s (rule %s)", d.Ref(), hook, d.Rule)
	if d.Message != "" {
		msg += ": " + d.Message
	}
	return apierr.New(apierr.CodePolicyDenied, "%s", msg).
		WithDetails(map[string]any{"policyId": d.Policy, "policyVersion": d.Version, "rule": d.Rule})
}

// guardianDenied is the PolicyDenied error of an external Guardian Agent's
// deny: the policy is the one naming the guardian.
func guardianDenied(gd policy.Guardian, message, hook string) *apierr.Error {
	name, version := splitRef(gd.Policy)
	msg := fmt.Sprintf("denied by guardian %s of policy %s at hook %s", gd.URL, gd.Policy, hook)
	if message != "" {
		msg += ": " + message
	}
	return apierr.New(apierr.CodePolicyDenied, "%s", msg).
		WithDetails(map[string]any{"policyId": name, "policyVersion": version, "rule": "guardian:" + gd.URL})
}

func splitRef(ref string) (string, string) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == '@' {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, ""
}

// guardian asks one external Guardian Agent. Without a client, or when the
// guardian fails, the policy's failOpen decides.
func (g *Gateway) guardian(ctx context.Context, gd policy.Guardian, hook string, gc *GuardianCall) (GuardianDecision, error) {
	if g.cfg.Guardians == nil {
		err := fmt.Errorf("no guardian client is configured")
		if gd.FailOpen {
			return GuardianDecision{Action: resource.ActionAllow}, err
		}
		return GuardianDecision{Action: resource.ActionDeny, Message: "guardian " + gd.URL + " unavailable: " + err.Error()}, err
	}
	cctx, cancel := context.WithTimeout(ctx, gd.Duration)
	defer cancel()
	dec, err := g.cfg.Guardians.Decide(cctx, gd, hook, gc)
	if err != nil && dec.Action == "" {
		if gd.FailOpen {
			return GuardianDecision{Action: resource.ActionAllow}, err
		}
		return GuardianDecision{Action: resource.ActionDeny, Message: "guardian " + gd.URL + " unavailable: " + err.Error()}, err
	}
	return dec, err
}
