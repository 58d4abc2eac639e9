package policy

import (
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// Defaults of the gateway settings a policy can change.
const (
	DefaultIdempotencyWindow = 10 * time.Minute
	DefaultApprovalTimeout   = 24 * time.Hour
	DefaultGuardianTimeout   = 2 * time.Second
)

// policySettings is the parsed non-rule configuration of one policy.
type policySettings struct {
	idempotencyWindow time.Duration
	allowForce        bool
	approvalTimeout   time.Duration
	limits            []resource.PolicyLimit
	limitWindows      []time.Duration
	guardians         []resource.PolicyGuardian
	guardianTimeouts  []time.Duration
}

// parseSettings reads a policy's settings. Admission has validated the
// durations; one that still does not parse is ignored (the default holds)
// rather than failing the call.
func parseSettings(spec *resource.PolicySpec) policySettings {
	var ps policySettings
	if spec.Idempotency != nil {
		ps.idempotencyWindow = parseDuration(spec.Idempotency.Window)
		ps.allowForce = spec.Idempotency.AllowForce
	}
	if spec.Approval != nil {
		ps.approvalTimeout = parseDuration(spec.Approval.Timeout)
	}
	for _, l := range spec.Limits {
		w := parseDuration(l.Window)
		if w <= 0 {
			continue
		}
		ps.limits = append(ps.limits, l)
		ps.limitWindows = append(ps.limitWindows, w)
	}
	for _, g := range spec.Guardians {
		t := parseDuration(g.Timeout)
		if t <= 0 {
			t = DefaultGuardianTimeout
		}
		if len(g.Hooks) == 0 {
			g.Hooks = []string{resource.HookToolCallRequest}
		}
		ps.guardians = append(ps.guardians, g)
		ps.guardianTimeouts = append(ps.guardianTimeouts, t)
	}
	return ps
}

func parseDuration(s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// Settings is the gateway configuration that the policies bound to one
// call add up to.
type Settings struct {
	// IdempotencyWindow is the longest window any bound policy sets (the
	// most deduplication wins), DefaultIdempotencyWindow when none does.
	IdempotencyWindow time.Duration
	// ForcePolicy names the first bound policy that allows force
	// re-execution; empty means force is refused.
	ForcePolicy string
	// ApprovalTimeout is the shortest approval timeout any bound policy
	// sets, DefaultApprovalTimeout when none does.
	ApprovalTimeout time.Duration
	// Limits are every rate limit and budget of the bound policies.
	Limits []Limit
	// Guardians are the external Guardian Agents of the bound policies.
	Guardians []Guardian
}

// Limit is one rate limit or budget with the policy that sets it.
type Limit struct {
	resource.PolicyLimit
	// Policy is "<policy>@<version>".
	Policy string
	// Index is the limit's index in the policy's spec.limits.
	Index int
	// Duration is the parsed window.
	Duration time.Duration
}

// Hard reports whether the limit denies (hard) rather than warns (soft).
func (l Limit) Hard() bool { return l.Mode != "soft" }

// Guardian is one external Guardian Agent with the policy that names it.
type Guardian struct {
	resource.PolicyGuardian
	// Policy is "<policy>@<version>".
	Policy string
	// Duration is the parsed timeout.
	Duration time.Duration
}

// Settings returns the settings of the policies bound to in's namespace,
// environment and agent. It never compiles.
func (s *Set) Settings(in *Input) Settings {
	out := Settings{}
	for _, p := range s.policies {
		if !p.matches(in.Namespace, in.Environment, in.Agent) && !p.boundTo(in) {
			continue
		}
		ps := &p.settings
		ref := Ref(p.name, p.version)
		if ps.idempotencyWindow > out.IdempotencyWindow {
			out.IdempotencyWindow = ps.idempotencyWindow
		}
		if ps.allowForce && out.ForcePolicy == "" {
			out.ForcePolicy = ref
		}
		if ps.approvalTimeout > 0 && (out.ApprovalTimeout == 0 || ps.approvalTimeout < out.ApprovalTimeout) {
			out.ApprovalTimeout = ps.approvalTimeout
		}
		for i, l := range ps.limits {
			out.Limits = append(out.Limits, Limit{PolicyLimit: l, Policy: ref, Index: i, Duration: ps.limitWindows[i]})
		}
		for i, g := range ps.guardians {
			out.Guardians = append(out.Guardians, Guardian{PolicyGuardian: g, Policy: ref, Duration: ps.guardianTimeouts[i]})
		}
	}
	if out.IdempotencyWindow == 0 {
		out.IdempotencyWindow = DefaultIdempotencyWindow
	}
	if out.ApprovalTimeout == 0 {
		out.ApprovalTimeout = DefaultApprovalTimeout
	}
	return out
}

// Windows returns the longest idempotency window and the longest limit
// window that any of policies sets (DefaultIdempotencyWindow at least, and
// zero when no policy sets a limit): a claim made longer ago than the
// first, or a counter of a window that started longer ago than the second,
// can no longer matter to any call of the tenant. A policy whose spec does
// not decode sets nothing.
func Windows(policies []*resource.Object) (idempotency, limit time.Duration) {
	idempotency = DefaultIdempotencyWindow
	for _, o := range policies {
		spec, err := resource.DecodeSpec[resource.PolicySpec](o)
		if err != nil {
			continue
		}
		ps := parseSettings(&spec)
		idempotency = max(idempotency, ps.idempotencyWindow)
		for _, w := range ps.limitWindows {
			limit = max(limit, w)
		}
	}
	return idempotency, limit
}
