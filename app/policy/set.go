package policy

import (
	"fmt"
	"slices"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/warden-dev/warden/app/resource"
)

// Decision is the outcome of evaluating a Set at one hook. When no rule
// fires, Action is allow and Policy is empty.
type Decision struct {
	// Action is allow, deny, modify or require_approval.
	Action string `json:"action"`
	// Policy is the name of the deciding policy.
	Policy string `json:"policy,omitempty"`
	// Namespace is the namespace of the deciding policy.
	Namespace string `json:"namespace,omitempty"`
	// Version is the deciding policy's version.
	Version string `json:"version,omitempty"`
	// Rule is the name of the deciding rule.
	Rule string `json:"rule,omitempty"`
	// RuleIndex is the rule's index in spec.rules.
	RuleIndex int `json:"ruleIndex"`
	// Message is the rule's message, or why the rule failed to evaluate.
	Message string `json:"message,omitempty"`
	// Failed is true when the rule failed to evaluate and was counted as a
	// deny (fail closed).
	Failed bool `json:"failed,omitempty"`
}

// Ref renders the deciding policy as "<policy>@<version>", or "" when no
// policy decided.
func (d Decision) Ref() string {
	if d.Policy == "" {
		return ""
	}
	return Ref(d.Policy, d.Version)
}

// Denied reports whether the decision blocks the action.
func (d Decision) Denied() bool { return d.Action == resource.ActionDeny }

// severity orders actions from least to most restrictive; 0 is unknown.
func severity(action string) int {
	switch action {
	case resource.ActionAllow:
		return 1
	case resource.ActionModify:
		return 2
	case resource.ActionRequireApproval:
		return 3
	case resource.ActionDeny:
		return 4
	}
	return 0
}

// MoreRestrictive reports whether action a outranks action b
// (deny > require_approval > modify > allow).
func MoreRestrictive(a, b string) bool { return severity(a) > severity(b) }

const (
	bitPreflight uint8 = 1 << iota
	bitToolCallRequest
	bitToolCallResult
	bitModelCall
	bitStep

	allHooks = bitPreflight | bitToolCallRequest | bitToolCallResult | bitModelCall | bitStep
)

func hookBit(h string) uint8 {
	switch h {
	case resource.HookPreflight:
		return bitPreflight
	case resource.HookToolCallRequest:
		return bitToolCallRequest
	case resource.HookToolCallResult:
		return bitToolCallResult
	case resource.HookStep:
		return bitStep
	case resource.HookModelCall:
		return bitModelCall
	}
	return 0
}

type compiledPolicy struct {
	key, stamp      string
	name, namespace string
	version         string
	selector        resource.PolicySelector
	rules           []*compiledRule
	errs            resource.FieldErrors
	// settings are the policy's idempotency, limits, approval and
	// guardian configuration, parsed once.
	settings policySettings
}

type compiledRule struct {
	name    string
	action  string
	message string
	hooks   uint8
	prg     cel.Program
	vars    []string
	// tool, when set, is the only tool the rule can fire for (toolGuard).
	tool string
	// broken says why the rule has no program; it then always denies.
	broken string
	// set and remove are the rule's modify operations, set in path order.
	set    []setOp
	remove []string
}

// setOp sets one input path to the value of a CEL expression.
type setOp struct {
	path string
	prg  cel.Program
	// broken says why the expression has no program.
	broken string
}

// matches reports whether the policy's selector binds it to the given
// namespace, environment and agent; an empty list matches all, and an
// empty environment argument matches any environment.
func (p *compiledPolicy) matches(namespace, environment, agent string) bool {
	sel := &p.selector
	if len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, namespace) {
		return false
	}
	if environment != "" && len(sel.Environments) > 0 && !slices.Contains(sel.Environments, environment) {
		return false
	}
	if len(sel.Agents) > 0 && !slices.Contains(sel.Agents, agent) {
		return false
	}
	return true
}

// boundTo reports whether the agent of in binds p explicitly and p's
// environments admit in's environment.
func (p *compiledPolicy) boundTo(in *Input) bool {
	if p.namespace != in.Namespace || !slices.Contains(in.Bound, p.name) {
		return false
	}
	envs := p.selector.Environments
	return in.Environment == "" || len(envs) == 0 || slices.Contains(envs, in.Environment)
}

// Set is an immutable, evaluable collection of compiled policies, built by
// Engine.Build. It is safe for concurrent use.
type Set struct {
	policies []*compiledPolicy
}

// Len returns the number of policies in the set.
func (s *Set) Len() int { return len(s.policies) }

// PolicyRef is a policy bound to an agent, as the compiler lists it.
type PolicyRef struct {
	// Namespace and Name identify the policy.
	Namespace, Name string
	// Version is the policy's version.
	Version string
}

// String renders the reference as "<policy>@<version>".
func (r PolicyRef) String() string { return Ref(r.Name, r.Version) }

// Bound returns the policies whose selector binds them to the agent in
// namespace in some environment, in evaluation order.
func (s *Set) Bound(namespace, agent string) []PolicyRef {
	var out []PolicyRef
	for _, p := range s.policies {
		if p.matches(namespace, "", agent) {
			out = append(out, PolicyRef{Namespace: p.namespace, Name: p.name, Version: p.version})
		}
	}
	return out
}

// Decide evaluates every rule of the input's hook of every policy bound to
// the input's namespace, environment and agent, and returns the most
// restrictive decision; among equals the first in evaluation order wins.
// It never compiles.
func (s *Set) Decide(in *Input) Decision {
	best := Decision{Action: resource.ActionAllow}
	s.eval(in, func(d Decision) bool {
		if severity(d.Action) > severity(best.Action) || (best.Policy == "" && d.Action == best.Action) {
			best = d
		}
		return best.Action != resource.ActionDeny
	})
	return best
}

// Evaluate returns every decision that fired for the input, in evaluation
// order: the gateway applies modify decisions in this order, and preflight
// reports every deny at once.
func (s *Set) Evaluate(in *Input) []Decision {
	var out []Decision
	s.eval(in, func(d Decision) bool {
		out = append(out, d)
		return true
	})
	return out
}

// eval calls fire for each firing rule until fire returns false.
func (s *Set) eval(in *Input, fire func(Decision) bool) {
	bit := hookBit(in.Hook)
	if bit == 0 {
		fire(Decision{Action: resource.ActionDeny, Failed: true,
			Message: fmt.Sprintf("unknown hook %q: denied (fail closed)", in.Hook)})
		return
	}
	act := &activation{in: in}
	for _, p := range s.policies {
		if !p.matches(in.Namespace, in.Environment, in.Agent) && !p.boundTo(in) {
			continue
		}
		for i, r := range p.rules {
			if r.hooks&bit == 0 || r.tool != "" && r.tool != in.Tool.Name {
				continue
			}
			d, ok := r.eval(act)
			if !ok {
				continue
			}
			d.Policy, d.Namespace, d.Version, d.RuleIndex = p.name, p.namespace, p.version, i
			if d.Failed {
				d.Message = fmt.Sprintf("rule %s of policy %s failed to evaluate at %s, so it counts as deny (fail closed): %s",
					r.name, Ref(p.name, p.version), in.Hook, d.Message)
			}
			if !fire(d) {
				return
			}
		}
	}
}

// eval runs one rule; ok is false when the rule does not fire.
func (r *compiledRule) eval(act *activation) (Decision, bool) {
	if r.prg == nil {
		return Decision{Action: resource.ActionDeny, Rule: r.name, Failed: true, Message: r.broken}, true
	}
	out, _, err := r.prg.Eval(act)
	if err != nil {
		return Decision{Action: resource.ActionDeny, Rule: r.name, Failed: true, Message: err.Error()}, true
	}
	if out != types.True {
		if out == types.False {
			return Decision{}, false
		}
		return Decision{Action: resource.ActionDeny, Rule: r.name, Failed: true,
			Message: fmt.Sprintf("the when expression returned %v, not a bool", out.Value())}, true
	}
	return Decision{Action: r.action, Rule: r.name, Message: r.message}, true
}

// UsesVariable reports whether the deciding rule of d reads the named CEL
// variable; preflight uses it to point a diagnostic at the offending field.
func (s *Set) UsesVariable(d Decision, name string) bool {
	for _, p := range s.policies {
		if p.name == d.Policy && p.namespace == d.Namespace && d.RuleIndex < len(p.rules) {
			return slices.Contains(p.rules[d.RuleIndex].vars, name)
		}
	}
	return false
}
