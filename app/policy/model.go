package policy

import (
	"slices"

	"github.com/warden-dev/warden/app/resource"
)

// DecideModel judges a model call in the model router: the rules of the
// modelCall hook (in.Model and in.Args set), and the preflight rules that
// read `models`, evaluated with models = [in.Model], so that "model X is
// denied in prod" holds at call time exactly as at apply time. Preflight
// rules that do not read `models` judge what is applied, not a call, and
// are left out. It returns the most restrictive decision, as Decide does.
func (s *Set) DecideModel(in *Input) Decision {
	best := Decision{Action: resource.ActionAllow}
	keep := func(d Decision) bool {
		if severity(d.Action) > severity(best.Action) || (best.Policy == "" && d.Action == best.Action) {
			best = d
		}
		return best.Action != resource.ActionDeny
	}
	call := *in
	call.Hook = resource.HookModelCall
	s.eval(&call, keep)
	if best.Denied() {
		return best
	}
	pre := call
	pre.Hook, pre.Models, pre.Kind = resource.HookPreflight, []string{in.Model}, resource.KindModel
	act := &activation{in: &pre}
	for _, p := range s.policies {
		if !p.matches(pre.Namespace, pre.Environment, pre.Agent) && !p.boundTo(&pre) {
			continue
		}
		for i, r := range p.rules {
			if r.hooks&bitPreflight == 0 || !slices.Contains(r.vars, VarModels) {
				continue
			}
			d, ok := r.eval(act)
			if !ok {
				continue
			}
			d.Policy, d.Namespace, d.Version, d.RuleIndex = p.name, p.namespace, p.version, i
			if !keep(d) {
				return best
			}
		}
	}
	return best
}
