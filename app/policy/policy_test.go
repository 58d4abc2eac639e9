package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

// newPolicy builds a Policy object; rules are {name, hooks, when, action}.
func newPolicy(name string, gen int64, selector map[string]any, rules ...map[string]any) *resource.Object {
	rs := make([]any, len(rules))
	for i, r := range rules {
		rs[i] = r
	}
	spec := map[string]any{"rules": rs}
	if selector != nil {
		spec["selector"] = selector
	}
	return &resource.Object{
		APIVersion: resource.GroupVersion, Kind: resource.KindPolicy,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default", Generation: gen, ResourceVersion: fmt.Sprint(gen * 10)},
		Spec:     spec,
	}
}

func rule(name, hook, when, action string) map[string]any {
	return map[string]any{"name": name, "hooks": []any{hook}, "when": when, "action": action, "message": name + " fired"}
}

func setup(t *testing.T, policies ...*resource.Object) *Set {
	t.Helper()
	e := NewEngine()
	s, errs := e.Build(policies)
	require.Empty(t, errs)
	return s
}

func preflight(env string) *Input {
	return &Input{
		Hook: resource.HookPreflight, Namespace: "default", Environment: env, Agent: "support-bot",
		Kind: resource.KindDeployment, Object: map[string]any{"spec": map[string]any{"environment": env}},
		Models: []string{"openai:gpt-4o", "anthropic:claude-sonnet"},
		Tools:  []ToolRef{{Name: "stripe.refund", SideEffect: resource.SideEffectFinancial}},
	}
}

func TestDecideSelectors(t *testing.T) {
	t.Parallel()
	deny := rule("no-gpt4o-in-prod", resource.HookPreflight, `"openai:gpt-4o" in models`, resource.ActionDeny)
	tests := []struct {
		name     string
		selector map[string]any
		in       *Input
		want     string
	}{
		{"empty selector matches all", nil, preflight("dev"), resource.ActionDeny},
		{"environment selected", map[string]any{"environments": []any{"prod"}}, preflight("prod"), resource.ActionDeny},
		{"environment not selected", map[string]any{"environments": []any{"prod"}}, preflight("staging"), resource.ActionAllow},
		{"namespace not selected", map[string]any{"namespaces": []any{"team-a"}}, preflight("prod"), resource.ActionAllow},
		{"namespace selected", map[string]any{"namespaces": []any{"team-a", "default"}}, preflight("prod"), resource.ActionDeny},
		{"agent not selected", map[string]any{"agents": []any{"other"}}, preflight("prod"), resource.ActionAllow},
		{"all three selected", map[string]any{"agents": []any{"support-bot"}, "namespaces": []any{"default"}, "environments": []any{"prod"}}, preflight("prod"), resource.ActionDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, newPolicy("model-guard", 3, tt.selector, deny))
			d := s.Decide(tt.in)
			require.Equal(t, tt.want, d.Action)
			if tt.want == resource.ActionDeny {
				require.Equal(t, "model-guard@3", d.Ref())
				require.Equal(t, "no-gpt4o-in-prod", d.Rule)
				require.Equal(t, "no-gpt4o-in-prod fired", d.Message)
			}
		})
	}
}

func TestDecidePrecedence(t *testing.T) {
	t.Parallel()
	const hook = resource.HookToolCallRequest
	allow := rule("allow-all", hook, `true`, resource.ActionAllow)
	modify := rule("scope", hook, `true`, resource.ActionModify)
	approve := rule("big-refund", hook, `has(input.amount) && input.amount > 100`, resource.ActionRequireApproval)
	deny := rule("huge-refund", hook, `has(input.amount) && input.amount > 5000`, resource.ActionDeny)
	never := rule("never", hook, `false`, resource.ActionDeny)
	tests := []struct {
		name       string
		rules      []map[string]any
		amount     float64
		wantAction string
		wantRule   string
	}{
		{"nothing fires", []map[string]any{never}, 1, resource.ActionAllow, ""},
		{"allow names its policy", []map[string]any{allow}, 1, resource.ActionAllow, "allow-all"},
		{"modify beats allow", []map[string]any{allow, modify}, 1, resource.ActionModify, "scope"},
		{"approval beats modify", []map[string]any{modify, approve, allow}, 150, resource.ActionRequireApproval, "big-refund"},
		{"deny beats approval", []map[string]any{approve, deny}, 6000, resource.ActionDeny, "huge-refund"},
		{"deny beats everything in any order", []map[string]any{deny, allow, modify, approve}, 6000, resource.ActionDeny, "huge-refund"},
		{"int literal compares with double input", []map[string]any{approve}, 100.5, resource.ActionRequireApproval, "big-refund"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, newPolicy("refund-limits", 1, nil, tt.rules...))
			d := s.Decide(&Input{Hook: hook, Namespace: "default", Environment: "dev", Agent: "a",
				Tool: ToolRef{Name: "stripe.refund", SideEffect: resource.SideEffectFinancial},
				Args: map[string]any{"amount": tt.amount}})
			require.Equal(t, tt.wantAction, d.Action)
			require.Equal(t, tt.wantRule, d.Rule)
		})
	}
}

func TestDecideOrderAcrossPolicies(t *testing.T) {
	t.Parallel()
	// Two denies: the policy that sorts first by name decides, whatever
	// the order the objects were given in.
	b := newPolicy("b-policy", 1, nil, rule("b", resource.HookPreflight, `true`, resource.ActionDeny))
	a := newPolicy("a-policy", 2, nil, rule("a", resource.HookPreflight, `true`, resource.ActionDeny))
	for _, order := range [][]*resource.Object{{a, b}, {b, a}} {
		s := setup(t, order...)
		d := s.Decide(preflight("prod"))
		require.Equal(t, "a-policy@2", d.Ref())
		all := s.Evaluate(preflight("prod"))
		require.Len(t, all, 2)
		require.Equal(t, "a", all[0].Rule)
		require.Equal(t, "b", all[1].Rule)
	}
}

func TestDecideHooks(t *testing.T) {
	t.Parallel()
	p := newPolicy("p", 1, nil,
		rule("pre", resource.HookPreflight, `true`, resource.ActionDeny),
		map[string]any{"name": "default-hook", "when": `tool.sideEffect == "financial"`, "action": resource.ActionRequireApproval},
		rule("result", resource.HookToolCallResult, `string(output).contains("@")`, resource.ActionModify),
		rule("model", resource.HookModelCall, `model.startsWith("openai:")`, resource.ActionDeny),
	)
	s := setup(t, p)
	fin := ToolRef{Name: "stripe.refund", SideEffect: resource.SideEffectFinancial}
	require.Equal(t, "pre", s.Decide(preflight("dev")).Rule)
	require.Equal(t, "default-hook", s.Decide(&Input{Hook: resource.HookToolCallRequest, Tool: fin}).Rule)
	require.Equal(t, "result", s.Decide(&Input{Hook: resource.HookToolCallResult, Tool: fin, Output: "mail me at a@b.c"}).Rule)
	require.Equal(t, resource.ActionAllow, s.Decide(&Input{Hook: resource.HookToolCallResult, Tool: fin, Output: "nothing"}).Action)
	require.Equal(t, "model", s.Decide(&Input{Hook: resource.HookModelCall, Model: "openai:gpt-4o"}).Rule)
	d := s.Decide(&Input{Hook: "bogus"})
	require.True(t, d.Denied())
	require.True(t, d.Failed)
}

func TestDecideFailsClosed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		when string
		want string
	}{
		{"missing key", `object.spec.nope == "x"`, "no such key"},
		{"division by zero", `1 / (size(models) - 2) > 0`, "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, newPolicy("guard", 4, nil, rule("r", resource.HookPreflight, tt.when, resource.ActionAllow)))
			in := preflight("prod")
			d := s.Decide(in)
			require.Equal(t, resource.ActionDeny, d.Action)
			require.True(t, d.Failed)
			require.Equal(t, "guard@4", d.Ref())
			require.Contains(t, d.Message, "rule r of policy guard@4 failed to evaluate at preflight, so it counts as deny (fail closed)")
			require.Contains(t, d.Message, tt.want)
		})
	}
}

func TestCheckPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules []map[string]any
		want  resource.FieldErrors
	}{
		{"valid", []map[string]any{rule("ok", resource.HookPreflight, `environment == "prod" && "openai:gpt-4o" in models`, resource.ActionDeny)}, nil},
		{"syntax error", []map[string]any{
			rule("ok", resource.HookPreflight, `true`, resource.ActionDeny),
			rule("bad", resource.HookPreflight, `models.exists(m, m ==`, resource.ActionDeny),
		}, resource.FieldErrors{{Path: "spec.rules[1].when", Code: resource.ErrCodeInvalid}}},
		{"undeclared variable", []map[string]any{rule("bad", resource.HookPreflight, `request.size > 1`, resource.ActionDeny)},
			resource.FieldErrors{{Path: "spec.rules[0].when", Code: resource.ErrCodeInvalid}}},
		{"not bool", []map[string]any{rule("bad", resource.HookPreflight, `size(models)`, resource.ActionDeny)},
			resource.FieldErrors{{Path: "spec.rules[0].when", Code: resource.ErrCodeInvalid}}},
		{"variable of another hook", []map[string]any{rule("bad", resource.HookPreflight, `input.amount > 1`, resource.ActionDeny)},
			resource.FieldErrors{{Path: "spec.rules[0].when", Code: resource.ErrCodeInvalid}}},
		{"comprehensions nested too deep", []map[string]any{rule("bad", resource.HookPreflight, `models.all(a, models.all(b, models.all(c, true)))`, resource.ActionDeny)},
			resource.FieldErrors{{Path: "spec.rules[0].when", Code: resource.ErrCodeInvalid}}},
		{"namespace is reserved", []map[string]any{rule("bad", resource.HookPreflight, `namespace == "x"`, resource.ActionDeny)},
			resource.FieldErrors{{Path: "spec.rules[0].when", Code: resource.ErrCodeInvalid}}},
		{"unknown hook and action", []map[string]any{rule("bad", "later", `true`, "maybe")},
			resource.FieldErrors{{Path: "spec.rules[0].hooks[0]", Code: resource.ErrCodeNotSupported}, {Path: "spec.rules[0].action", Code: resource.ErrCodeNotSupported}}},
		{"modify set expression", []map[string]any{{"name": "m", "hooks": []any{resource.HookToolCallRequest}, "when": `true`, "action": resource.ActionModify,
			"modify": map[string]any{"set": map[string]any{"query": `input.query + " scope:mine"`, "limit": `nope(`}}}},
			resource.FieldErrors{{Path: `spec.rules[0].modify.set["limit"]`, Code: resource.ErrCodeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := CheckPolicy(newPolicy("p", 1, nil, tt.rules...))
			require.Len(t, got, len(tt.want), "%v", got)
			for i := range tt.want {
				require.Equal(t, tt.want[i].Path, got[i].Path)
				require.Equal(t, tt.want[i].Code, got[i].Code)
				require.NotEmpty(t, got[i].Message)
			}
		})
	}
}

func TestBrokenPolicyDeniesAndIsReported(t *testing.T) {
	t.Parallel()
	e := NewEngine()
	s, errs := e.Build([]*resource.Object{newPolicy("p", 2, nil, rule("bad", resource.HookPreflight, `nope(`, resource.ActionAllow))})
	require.Len(t, errs, 1)
	require.Equal(t, "p", errs[0].Name)
	d := s.Decide(preflight("dev"))
	require.True(t, d.Denied())
	require.Contains(t, d.Message, "does not compile")
}

func TestBuildCaches(t *testing.T) {
	t.Parallel()
	e := NewEngine()
	a := newPolicy("a", 1, nil, rule("r", resource.HookPreflight, `true`, resource.ActionDeny))
	b := newPolicy("b", 1, nil, rule("r", resource.HookPreflight, `false`, resource.ActionDeny))
	_, errs := e.Build([]*resource.Object{a, b})
	require.Empty(t, errs)
	require.EqualValues(t, 2, e.Compilations())

	// Same resourceVersions, fresh copies: nothing is recompiled.
	s, _ := e.Build([]*resource.Object{a.DeepCopy(), b.DeepCopy()})
	require.EqualValues(t, 2, e.Compilations())
	require.True(t, s.Decide(preflight("dev")).Denied())
	require.Empty(t, e.Check(a.DeepCopy()))
	require.EqualValues(t, 2, e.Compilations())

	// A new version of b only recompiles b.
	b2 := b.DeepCopy()
	b2.Metadata.Generation, b2.Metadata.ResourceVersion = 2, "99"
	b2.Spec["rules"] = []any{rule("r", resource.HookPreflight, `true`, resource.ActionRequireApproval)}
	s, _ = e.Build([]*resource.Object{a, b2})
	require.EqualValues(t, 3, e.Compilations())
	all := s.Evaluate(preflight("dev"))
	require.Len(t, all, 2)
	require.Equal(t, "b@2", all[1].Ref())

	// Same resourceVersion but different content (a rolled-back write may
	// reuse a version) is recompiled, never served stale.
	a2 := a.DeepCopy()
	a2.Spec["rules"] = []any{rule("r", resource.HookPreflight, `false`, resource.ActionDeny)}
	s, _ = e.Build([]*resource.Object{a2, b2})
	require.EqualValues(t, 4, e.Compilations())
	require.Equal(t, resource.ActionRequireApproval, s.Decide(preflight("dev")).Action)
}

func TestVersionAndBound(t *testing.T) {
	t.Parallel()
	p := newPolicy("p", 7, map[string]any{"environments": []any{"prod"}}, rule("r", resource.HookPreflight, `true`, resource.ActionDeny))
	require.Equal(t, "7", Version(p))
	q := newPolicy("q", 2, map[string]any{"agents": []any{"other"}}, rule("r", resource.HookPreflight, `true`, resource.ActionDeny))
	q.Spec["version"] = "2024-06"
	require.Equal(t, "2024-06", Version(q))
	s := setup(t, p, q)
	// Bound ignores the environment: p binds in prod, so it is listed.
	refs := s.Bound("default", "support-bot")
	require.Len(t, refs, 1)
	require.Equal(t, "p@7", refs[0].String())
	require.Len(t, s.Bound("default", "other"), 2)
}

func BenchmarkDecide(b *testing.B) {
	rules := make([]map[string]any, 20)
	for i := range rules {
		switch i % 4 {
		case 0:
			rules[i] = rule(fmt.Sprintf("r%d", i), resource.HookToolCallRequest, fmt.Sprintf(`has(input.amount) && input.amount > %d`, 10000+i), resource.ActionDeny)
		case 1:
			rules[i] = rule(fmt.Sprintf("r%d", i), resource.HookToolCallRequest, fmt.Sprintf(`tool.name == "stripe.refund%d"`, i), resource.ActionRequireApproval)
		case 2:
			rules[i] = rule(fmt.Sprintf("r%d", i), resource.HookToolCallRequest, `tool.sideEffect == "privileged" && environment == "prod"`, resource.ActionDeny)
		default:
			rules[i] = rule(fmt.Sprintf("r%d", i), resource.HookToolCallRequest, `agent.startsWith("batch-") && ns in ["a", "b"]`, resource.ActionModify)
		}
	}
	e := NewEngine()
	s, errs := e.Build([]*resource.Object{newPolicy("bench", 1, nil, rules...)})
	require.Empty(b, errs)
	in := &Input{Hook: resource.HookToolCallRequest, Namespace: "default", Environment: "prod", Agent: "support-bot",
		Tool: ToolRef{Name: "stripe.refund", SideEffect: resource.SideEffectFinancial}, Args: map[string]any{"amount": 250.0}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if d := s.Decide(in); d.Action != resource.ActionAllow {
			b.Fatal(d)
		}
	}
}

func TestExplicitBinding(t *testing.T) {
	t.Parallel()
	// Selected for another agent, but bound explicitly by support-bot: it
	// applies in the environments it names, and only there.
	p := newPolicy("pinned", 1, map[string]any{"agents": []any{"other"}, "environments": []any{"prod"}},
		rule("r", resource.HookPreflight, `true`, resource.ActionDeny))
	s := setup(t, p)
	in := preflight("prod")
	require.Equal(t, resource.ActionAllow, s.Decide(in).Action)
	in.Bound = []string{"pinned"}
	require.True(t, s.Decide(in).Denied())
	in.Environment = "dev"
	require.Equal(t, resource.ActionAllow, s.Decide(in).Action)
}

func TestConcurrentBuildAndDecide(t *testing.T) {
	t.Parallel()
	e := NewEngine()
	p := newPolicy("guard", 1, nil, rule("r", resource.HookPreflight, `"openai:gpt-4o" in models`, resource.ActionDeny))
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				s, errs := e.Build([]*resource.Object{p.DeepCopy()})
				if len(errs) > 0 || !s.Decide(preflight("prod")).Denied() {
					t.Error("unexpected decision")
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	// Racing builders may each compile the first time, never after.
	require.LessOrEqual(t, e.Compilations(), int64(4))
}

// A rule whose when expression requires tool.name == "x" (alone or as a
// term of a conjunction) is skipped for other tools, and decides exactly
// as its expression does: for its tool it is evaluated, errors included.
func TestToolGuardedRules(t *testing.T) {
	t.Parallel()
	h := resource.HookToolCallRequest
	tests := []struct {
		when  string
		guard string
	}{
		{`tool.name == "crm.lookup"`, "crm.lookup"},
		{`"crm.lookup" == tool.name && input.q < 0`, "crm.lookup"},
		{`has(input.q) && tool.name == "crm.lookup" && input.q < 0`, "crm.lookup"},
		{`(tool.name == "crm.lookup" && input.q < 0) && has(input.q)`, "crm.lookup"},
		{`tool.name == "crm.lookup" && input.missing.deep == 1`, "crm.lookup"},
		{`tool.name == "crm.lookup" || input.q < 0`, ""},
		{`!(tool.name == "crm.lookup")`, ""},
		{`tool.name != "crm.lookup"`, ""},
		{`tool.sideEffect == "crm.lookup"`, ""},
		{`input.name == "crm.lookup"`, ""},
		{`[1].exists(tool, tool == 1) && tool.name == "crm.lookup"`, "crm.lookup"},
	}
	for _, tc := range tests {
		s := setup(t, newPolicy("p", 1, nil, rule("r", h, tc.when, resource.ActionDeny)))
		require.Equal(t, tc.guard, s.policies[0].rules[0].tool, tc.when)
		for _, tool := range []string{"crm.lookup", "other.tool", ""} {
			for _, args := range []map[string]any{{"q": -1.0}, {"q": 1.0}, {}} {
				in := &Input{Hook: h, Namespace: "default", Environment: "dev", Agent: "bot", Tool: ToolRef{Name: tool}, Args: args}
				got := s.Evaluate(in)
				// The same rule without the guard: its program alone.
				var want []Decision
				if d, ok := s.policies[0].rules[0].eval(&activation{in: in}); ok {
					want = []Decision{d}
				}
				require.Equal(t, len(want), len(got), "%s for %q %v", tc.when, tool, args)
				if len(want) == 1 {
					require.Equal(t, want[0].Action, got[0].Action)
					require.Equal(t, want[0].Failed, got[0].Failed)
				}
			}
		}
	}
}
