package gateway

import (
	"context"
	"slices"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
)

// processOutput is step 9, hook toolCallResult: the Tool's safety settings
// (PII redaction, prompt-injection scanning in mode flag, redact or block,
// truncation above maxOutputBytes), then the policy rules and external
// Guardian Agents bound at toolCallResult (deny blocks the result, modify
// rewrites it).
func (c *call) processOutput(ctx context.Context, res *result) error {
	if res.failure != nil && res.output == nil {
		return nil
	}
	safety := c.tool.spec.Safety
	out, report := scanOutput(res.output, safety)
	res.output, res.report = out, report
	if report.blocked {
		res.block = apierr.New(apierr.CodePolicyDenied,
			"the result of tool %q was blocked at hook toolCallResult: it carries prompt-injection patterns (%s), and the tool's safety.scanInjection is block",
			c.req.Tool, report.summary).
			WithDetails(map[string]any{"policyId": "", "policyVersion": "", "rule": "safety.scanInjection"})
		res.output = nil
		return nil
	}
	in := c.policyInput(resource.HookToolCallResult, c.input, res.output)
	set := c.snap.policies
	res.decision = policy.Decision{Action: resource.ActionAllow}
	for _, d := range set.Evaluate(in) {
		if policy.MoreRestrictive(d.Action, res.decision.Action) || res.decision.Policy == "" && d.Action == res.decision.Action {
			res.decision = d
		}
		switch d.Action {
		case resource.ActionDeny:
			res.block = policyDenied(d, resource.HookToolCallResult)
			res.output = nil
			return nil
		case resource.ActionModify:
			m, ok := res.output.(map[string]any)
			if !ok {
				m = map[string]any{"result": res.output}
			}
			modified, err := set.Modify(d, in, m)
			if err != nil {
				res.block = policyDenied(policy.Decision{Policy: d.Policy, Version: d.Version, Rule: d.Rule,
					Message: "the modify of this rule failed, so the result is withheld (fail closed): " + err.Error()}, resource.HookToolCallResult)
				res.output = nil
				return nil
			}
			res.output, res.modified = modified, true
			in.Output = modified
		}
	}
	for _, gd := range c.settings.Guardians {
		if !slices.Contains(gd.Hooks, resource.HookToolCallResult) {
			continue
		}
		dec, err := c.g.guardian(ctx, gd, resource.HookToolCallResult, c.guardianCall(c.input, res.output, res.failure != nil))
		if err != nil {
			c.g.log.WarnContext(ctx, "guardian failed", "guardian", gd.URL, "policy", gd.Policy, "failOpen", gd.FailOpen, "err", err)
		}
		switch dec.Action {
		case resource.ActionDeny:
			res.block = guardianDenied(gd, dec.Message, resource.HookToolCallResult)
			res.output = nil
			return nil
		case resource.ActionModify:
			if dec.Output != nil {
				res.output, res.modified = dec.Output, true
			}
		}
	}
	return nil
}
