package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

func TestSettingsCompose(t *testing.T) {
	t.Parallel()
	a := newPolicy("dedupe", 1, nil)
	a.Spec["idempotency"] = map[string]any{"window": "30m", "allowForce": true}
	a.Spec["approval"] = map[string]any{"timeout": "2h"}
	a.Spec["limits"] = []any{map[string]any{"scope": "tool", "match": "*", "window": "1m", "maxCalls": 5}}
	b := newPolicy("budgets", 2, map[string]any{"environments": []any{"prod"}})
	b.Spec["approval"] = map[string]any{"timeout": "15m"}
	b.Spec["limits"] = []any{map[string]any{"scope": "agent", "match": "support-bot", "window": "1h", "maxCost": 10.5, "mode": "soft"}}
	b.Spec["guardians"] = []any{map[string]any{"url": "https://guardian.example/aos"}}
	s := setup(t, a, b)

	tests := []struct {
		name            string
		env             string
		window, timeout time.Duration
		limits          int
		guardians       int
	}{
		{"dev sees one policy", "dev", 30 * time.Minute, 2 * time.Hour, 1, 0},
		{"prod sees both; the shortest timeout wins", "prod", 30 * time.Minute, 15 * time.Minute, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s.Settings(&Input{Hook: resource.HookToolCallRequest, Namespace: "default", Environment: tt.env, Agent: "support-bot"})
			require.Equal(t, tt.window, got.IdempotencyWindow)
			require.Equal(t, tt.timeout, got.ApprovalTimeout)
			require.Len(t, got.Limits, tt.limits)
			require.Len(t, got.Guardians, tt.guardians)
			require.Equal(t, "dedupe@1", got.ForcePolicy)
			for _, l := range got.Limits {
				require.Equal(t, l.Policy == "dedupe@1", l.Hard(), "the soft limit is budgets'")
			}
			if tt.guardians > 0 {
				require.Equal(t, DefaultGuardianTimeout, got.Guardians[0].Duration)
				require.Equal(t, []string{resource.HookToolCallRequest}, got.Guardians[0].Hooks)
			}
		})
	}
	none := setup(t).Settings(&Input{Namespace: "default"})
	require.Equal(t, DefaultIdempotencyWindow, none.IdempotencyWindow)
	require.Equal(t, DefaultApprovalTimeout, none.ApprovalTimeout)
	require.Empty(t, none.ForcePolicy)
}

func TestModifyRewritesACopy(t *testing.T) {
	t.Parallel()
	r := rule("cap-limit", resource.HookToolCallRequest, `input.limit > 100`, resource.ActionModify)
	r["modify"] = map[string]any{
		"set":    map[string]any{"limit": "100", "query.scope": `"team:" + agent`},
		"remove": []any{"debug"},
	}
	s := setup(t, newPolicy("scoping", 1, nil, r))
	input := map[string]any{"limit": 5000.0, "debug": true, "query": map[string]any{"text": "x"}}
	in := &Input{Hook: resource.HookToolCallRequest, Namespace: "default", Agent: "support-bot",
		Tool: ToolRef{Name: "crm.search", SideEffect: resource.SideEffectReadOnly}, Args: input}
	d := s.Decide(in)
	require.Equal(t, resource.ActionModify, d.Action)
	out, err := s.Modify(d, in, input)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"limit": int64(100), "query": map[string]any{"text": "x", "scope": "team:support-bot"}}, normalize(out))
	require.Equal(t, 5000.0, input["limit"], "the original input is untouched")
	require.Contains(t, input, "debug")
}

// normalize turns whole floats into int64 so that expectations read
// naturally.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			out[k] = normalize(e)
		}
		return out
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

func TestNowIsAvailableAtRuntimeHooks(t *testing.T) {
	t.Parallel()
	s := setup(t, newPolicy("hours", 1, nil,
		rule("night", resource.HookToolCallRequest, `now.getHours("UTC") < 6`, resource.ActionDeny)))
	at := func(h int) *Input {
		return &Input{Hook: resource.HookToolCallRequest, Namespace: "default", Agent: "a",
			Now: time.Date(2026, 11, 23, h, 0, 0, 0, time.UTC)}
	}
	require.Equal(t, resource.ActionDeny, s.Decide(at(3)).Action)
	require.Equal(t, resource.ActionAllow, s.Decide(at(12)).Action)

	_, errs := NewEngine().Build([]*resource.Object{newPolicy("bad", 1, nil,
		rule("pre", resource.HookPreflight, `now.getHours() < 6`, resource.ActionDeny))})
	require.Len(t, errs, 1, "now is not a preflight variable")
}

func TestWindows(t *testing.T) {
	t.Parallel()
	withSpec := func(spec map[string]any) *resource.Object {
		o := newPolicy("p", 1, nil)
		o.Spec = spec
		return o
	}
	tests := []struct {
		name               string
		policies           []*resource.Object
		idempotency, limit time.Duration
	}{
		{"none", nil, DefaultIdempotencyWindow, 0},
		{"shorter idempotency window than the default", []*resource.Object{withSpec(map[string]any{"idempotency": map[string]any{"window": "1m"}})}, DefaultIdempotencyWindow, 0},
		{"longest of each", []*resource.Object{
			withSpec(map[string]any{"idempotency": map[string]any{"window": "2h"}, "limits": []any{map[string]any{"scope": "tool", "window": "1m", "maxCalls": 5}}}),
			withSpec(map[string]any{"limits": []any{map[string]any{"scope": "agent", "window": "720h", "maxCost": 10}}}),
		}, 2 * time.Hour, 720 * time.Hour},
		{"a spec that does not decode sets nothing", []*resource.Object{withSpec(map[string]any{"limits": "every"})}, DefaultIdempotencyWindow, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			idem, limit := Windows(tt.policies)
			require.Equal(t, tt.idempotency, idem)
			require.Equal(t, tt.limit, limit)
		})
	}
}
