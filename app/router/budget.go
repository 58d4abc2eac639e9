package router

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/store"
)

// Limit scopes the router counts (a Policy's spec.limits).
const (
	scopeModel     = "model"
	scopeAgent     = "agent"
	scopeNamespace = "namespace"
)

// budget is one limit that applies to a model call: its counters (calls
// and cost, and tokens in a sibling counter whose count is tokens).
type budget struct {
	policy.Limit
	subject string
	key     store.UsageKey
	tokens  store.UsageKey
}

// budgets returns the limits of the caller's policies that apply to a
// call of me. Budgets are checked before a call and charged after it from
// the provider's usage (as LiteLLM does): a model call's price is known
// only once it answered.
func (c *call) budgets(me *modelEntry) []budget {
	var out []budget
	for _, l := range c.settings.Limits {
		var subject string
		switch l.Scope {
		case scopeModel:
			subject = me.name
			if l.Match != "*" && l.Match != me.name && l.Match != me.routeID {
				continue
			}
		case scopeAgent:
			subject = c.p.Agent
		case scopeNamespace:
			subject = c.ns
		default:
			continue
		}
		if subject == "" || l.Scope != scopeModel && l.Match != "*" && l.Match != subject {
			continue
		}
		name, _, _ := strings.Cut(l.Policy, "@")
		start := c.start.Truncate(l.Duration)
		base := "model-router/" + c.ns + "/" + name + "#" + strconv.Itoa(l.Index) + "/" + l.Scope + "=" + subject
		out = append(out, budget{Limit: l, subject: subject,
			key: store.UsageKey{Key: base, WindowStart: start}, tokens: store.UsageKey{Key: base + "/tokens", WindowStart: start}})
	}
	return out
}

// checkBudgets reads the counters of bs and returns the first hard limit
// already reached, as the caller's error, and a warning for each soft one.
func (c *call) checkBudgets(ctx context.Context, bs []budget) (*apierr.Error, *budget, []string, error) {
	if len(bs) == 0 {
		return nil, nil, nil, nil
	}
	keys := make([]store.UsageKey, 0, 2*len(bs))
	for _, b := range bs {
		keys = append(keys, b.key, b.tokens)
	}
	var totals []store.UsageTotal
	err := c.r.st.View(ctx, c.p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		totals, err = r.UsageGet(ctx, keys)
		return err
	})
	if err != nil {
		return nil, nil, nil, errorf("read budgets: %w", err)
	}
	var warnings []string
	for i := range bs {
		b := &bs[i]
		t, tokens := totals[2*i], totals[2*i+1].Calls
		var what, code string
		switch {
		case b.MaxCalls > 0 && t.Calls >= b.MaxCalls:
			what, code = fmt.Sprintf("%d model calls per %s reached", b.MaxCalls, b.Duration), apierr.CodeRateLimited
		case b.MaxTokens > 0 && tokens >= b.MaxTokens:
			what, code = fmt.Sprintf("%d of %d tokens per %s used", tokens, b.MaxTokens, b.Duration), apierr.CodeBudgetExceeded
		case b.MaxCost > 0 && t.Cost >= b.MaxCost:
			what, code = fmt.Sprintf("cost %.4f of %.4f USD per %s spent", t.Cost, b.MaxCost, b.Duration), apierr.CodeBudgetExceeded
		default:
			continue
		}
		data := map[string]any{"policy": b.Policy, "limit": b.Index, "scope": b.Scope, "match": b.Match, "subject": b.subject,
			"window": b.Duration.String(), "calls": t.Calls, "tokens": tokens, "cost": t.Cost,
			"maxCalls": b.MaxCalls, "maxTokens": b.MaxTokens, "maxCost": b.MaxCost, "decision": c.dec.ID}
		if !b.Hard() {
			data["severity"], data["mode"] = "warning", "soft"
			c.event(events.BudgetExceeded, data)
			warnings = append(warnings, fmt.Sprintf("soft limit %s spec.limits[%d] (%s %s): %s", b.Policy, b.Index, b.Scope, b.Match, what))
			continue
		}
		data["severity"], data["mode"] = "error", "hard"
		c.event(events.BudgetExceeded, data)
		name, version, _ := strings.Cut(b.Policy, "@")
		retry := b.key.WindowStart.Add(b.Duration).Sub(c.start)
		e := apierr.New(code, "hard limit of policy %s spec.limits[%d] (%s %s) at hook modelCall: %s", b.Policy, b.Index, b.Scope, b.Match, what).
			WithDetails(map[string]any{"policyId": name, "policyVersion": version, "limit": b.Index, "scope": b.Scope, "match": b.Match,
				"window": b.Duration.String(), "retryAfterSeconds": int64(retry.Seconds()) + 1})
		return e, b, warnings, nil
	}
	return nil, nil, warnings, nil
}

// charges are what a call that answered adds to its budgets.
func charges(bs []budget, u Usage, cost float64) []store.UsageCharge {
	out := make([]store.UsageCharge, 0, 2*len(bs))
	for _, b := range bs {
		out = append(out, store.UsageCharge{UsageKey: b.key, Calls: 1, Cost: cost})
		if b.MaxTokens > 0 {
			out = append(out, store.UsageCharge{UsageKey: b.tokens, Calls: u.TotalTokens})
		}
	}
	return out
}

// price is a call's cost in USD from the Model's spec.cost.
func price(me *modelEntry, u Usage) float64 {
	return float64(u.PromptTokens)*me.spec.Cost.InputPerMillion/1e6 + float64(u.CompletionTokens)*me.spec.Cost.OutputPerMillion/1e6
}
