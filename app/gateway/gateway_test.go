package gateway_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadOnlyCallIsGovernedAndRecorded(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			r := e.call("crm.search", map[string]any{"query": "refund status"}, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Equal(t, "Succeeded", r.phase())
			require.Equal(t, "warden.dev/v1alpha1", r.body["apiVersion"])
			require.Equal(t, "ToolCall", r.body["kind"])
			out := r.output()
			require.Equal(t, "[REDACTED:EMAIL]", out["contact"], "the tool's safety.redactPII applies")
			require.Equal(t, "refund status", out["query"])
			spec := r.body["spec"].(map[string]any)
			require.Equal(t, "read_only", spec["sideEffects"].(map[string]any)["level"])
			require.Len(t, spec["sideEffects"].(map[string]any)["idempotencyKey"], 64)
			require.Equal(t, map[string]any{"required": false, "status": "not_required"}, spec["approval"])
			require.Equal(t, r.name(), r.header.Get("Warden-Tool-Call"))
			require.Equal(t, 1, e.tools.count("/search"))
			// The tool server got the idempotency key, never the agent's token.
			h := e.tools.headers["/search"]
			require.Equal(t, spec["sideEffects"].(map[string]any)["idempotencyKey"], h.Get("Idempotency-Key"))
			require.Empty(t, h.Get("Authorization"))

			// The record is on the control plane, filterable by agent.
			list := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls?agent=bot&since=1h", nil)
			require.Equal(t, http.StatusOK, list.status, string(list.raw))
			require.Len(t, list.body["items"], 1)
			none := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls?agent=other", nil)
			require.Empty(t, none.body["items"])
			got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+r.name(), e.bot(), nil, nil)
			require.Equal(t, http.StatusOK, got.status)
			require.Equal(t, "Succeeded", got.phase())
		})
	}
}

func TestBadCallsGetTheDocumentedErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: Namespace
metadata: {name: other}
`)
	big := strings.Repeat("x", 2<<20)
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		code   string
	}{
		{"missing token", "", map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, 401, "Unauthenticated"},
		{"garbage token", "not-a-token", map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, 401, "Unauthenticated"},
		{"unknown tool", e.bot(), map[string]any{"tool": "crm.nope", "input": map[string]any{}}, 404, "NotFound"},
		{"tool the agent does not reference", e.bot(), map[string]any{"tool": "hr.payroll", "input": map[string]any{}}, 403, "Forbidden"},
		{"input failing the schema", e.bot(), map[string]any{"tool": "crm.search", "input": map[string]any{"query": 5}}, 400, "InvalidRequest"},
		{"unknown field", e.bot(), map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}, "agent": "admin"}, 400, "InvalidRequest"},
		{"input not an object", e.bot(), `{"tool": "crm.search", "input": [1]}`, 400, "InvalidRequest"},
		{"malformed JSON", e.bot(), `{"tool": `, 400, "InvalidRequest"},
		{"oversized input", e.bot(), `{"tool": "crm.search", "input": {"query": "` + big + `"}}`, 413, "PayloadTooLarge"},
		{"token for another namespace", e.token("other", "bot", "dev"), map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, 404, "NotFound"},
		{"function tool through the REST API", e.bot(), map[string]any{"tool": "local.lookup", "input": map[string]any{}}, 400, "InvalidRequest"},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", tt.token, tt.body, nil)
				require.Equal(t, tt.status, r.status, string(r.raw))
				require.Equal(t, tt.code, r.code(), string(r.raw))
				require.NotEmpty(t, r.body["error"].(map[string]any)["message"])
			})
		}
	})
	require.Equal(t, 0, e.tools.count("/search"), "no refused call reached the tool")

	// A control-plane token is not a gateway token.
	r := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", e.admin, map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.raw))

	// Refusals of unknown tools are audited.
	audit := e.cp(http.MethodGet, "/v1/audit?verb=toolcalls/create", nil)
	require.Contains(t, string(audit.raw), "crm.nope")
}

func TestPolicyDenialNamesThePolicyAndIsRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	r := e.call("tickets.create", map[string]any{"title": "forbidden"}, nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
	require.Equal(t, "PolicyDenied", r.code())
	errBody := r.body["error"].(map[string]any)
	require.Contains(t, errBody["message"], "guard@3")
	require.Contains(t, errBody["message"], "toolCallRequest")
	require.Equal(t, map[string]any{"policyId": "guard", "policyVersion": "3", "rule": "no-forbidden-tickets"}, errBody["details"])
	require.Equal(t, 0, e.tools.count("/create"))
	name := r.header.Get("Warden-Tool-Call")
	require.NotEmpty(t, name)
	got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+name, e.bot(), nil, nil)
	require.Equal(t, "Denied", got.phase())
	audit := e.cp(http.MethodGet, "/v1/audit?verb=toolcalls/create", nil)
	require.Contains(t, string(audit.raw), "guard@3")
	events := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+name, nil)
	require.Equal(t, http.StatusOK, events.status)
}

func TestFiftyIdenticalCallsExecuteOnce(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			const n = 50
			var wg sync.WaitGroup
			results := make([]resp, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = e.call("tickets.create", map[string]any{"title": "printer on fire"}, nil)
				}()
			}
			wg.Wait()
			names := map[string]bool{}
			replayed := 0
			for _, r := range results {
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
				require.Equal(t, "Succeeded", r.phase())
				names[r.name()] = true
				if r.header.Get("Idempotent-Replayed") == "true" {
					replayed++
				}
			}
			require.Equal(t, 1, e.tools.count("/create"), "exactly one execution")
			require.Len(t, names, 1, "every caller sees the one call")
			require.Equal(t, n-1, replayed)

			// A caller key makes a different call; the same caller key
			// dedupes.
			a := e.call("tickets.create", map[string]any{"title": "printer on fire"}, map[string]string{"Idempotency-Key": "k-1"})
			b := e.call("tickets.create", map[string]any{"title": "printer on fire"}, map[string]string{"Idempotency-Key": "k-1"})
			require.Equal(t, a.name(), b.name())
			require.Equal(t, "true", b.header.Get("Idempotent-Replayed"))
			require.Equal(t, 2, e.tools.count("/create"))

			// force needs a policy that allows it.
			f := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", e.bot(),
				map[string]any{"tool": "tickets.create", "input": map[string]any{"title": "printer on fire"}, "force": true}, nil)
			require.Equal(t, http.StatusForbidden, f.status, string(f.raw))
			require.Equal(t, "PolicyDenied", f.code())
		})
	}
}

func TestFailedCallsDoNotBlockARetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	a := e.call("ops.fail", map[string]any{}, nil)
	require.Equal(t, http.StatusBadGateway, a.status, string(a.raw))
	require.Equal(t, "ToolFailed", a.code())
	b := e.call("ops.fail", map[string]any{}, nil)
	require.Equal(t, http.StatusBadGateway, b.status)
	require.NotEqual(t, a.header.Get("Warden-Tool-Call"), b.header.Get("Warden-Tool-Call"))
	require.Equal(t, 2, e.tools.count("/fail"))
}

func TestInjectedResultIsBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	r := e.call("web.fetch", map[string]any{}, nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
	require.Equal(t, "PolicyDenied", r.code())
	require.NotContains(t, string(r.raw), "evil.example", "the blocked result never reaches the agent")
	got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+r.header.Get("Warden-Tool-Call"), e.bot(), nil, nil)
	require.Equal(t, "Denied", got.phase())
	require.NotContains(t, string(got.raw), "evil.example", "nor is it stored")
}
