package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/workload"
)

// TestRequesterNeverDecides binds approver and breakglass to the agent
// itself: its own tokens still may not approve, deny or override its call,
// on the gateway and on the control plane, and each refusal is audited.
func TestRequesterNeverDecides(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: bot-approves}
spec:
  role: approver
  subjects: [{kind: Agent, name: bot}]
---
apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: bot-breakglass}
spec:
  role: breakglass
  subjects: [{kind: Agent, name: bot}]
`)
	cpTok, _, err := e.srv.Issuer().Issue(context.Background(), workload.IssueParams{
		Tenant: server.LocalTenant, Namespace: "default", Agent: "bot", Environment: "dev", Audience: workload.AudienceControlPlane,
	})
	require.NoError(t, err)

	r := e.pending(250)
	ap := approvalOf(r.name())
	tries := []struct {
		name, url, token string
		body             map[string]any
	}{
		{"gateway approve", e.gwURL + "/v1/tool-calls/" + r.name() + "/approve", e.bot(), map[string]any{"rationale": "me"}},
		{"decide approve", e.cpURL + "/v1/approvals/" + ap + "/decide", cpTok, map[string]any{"decision": "approve"}},
		{"decide deny", e.cpURL + "/v1/namespaces/default/approvals/" + ap + "/decide", cpTok, map[string]any{"decision": "deny"}},
		{"override", e.cpURL + "/v1/approvals/" + ap + "/override", cpTok, map[string]any{"decision": "approve", "rationale": "outage"}},
	}
	for _, tc := range tries {
		got := do(t, http.MethodPost, tc.url, tc.token, tc.body, nil)
		require.Equal(t, http.StatusForbidden, got.status, "%s: %s", tc.name, got.raw)
		require.Equal(t, "Forbidden", got.code(), tc.name)
	}
	require.Equal(t, 0, e.tools.count("/refund"))
	still := e.cp(http.MethodGet, "/v1/namespaces/default/approvals/"+ap, nil)
	require.Equal(t, "pending", still.body["status"].(map[string]any)["status"], string(still.raw))

	audit := e.cp(http.MethodGet, "/v1/audit?verb=approvals/decide", nil)
	require.Contains(t, string(audit.raw), "separation of duties", string(audit.raw))
	audit = e.cp(http.MethodGet, "/v1/audit?verb=approvals/override", nil)
	require.Contains(t, string(audit.raw), "separation of duties", string(audit.raw))

	// Anyone else with the role still decides.
	d := e.cp(http.MethodPost, "/v1/approvals/"+ap+"/decide", map[string]any{"decision": "approve"})
	require.Equal(t, http.StatusOK, d.status, string(d.raw))
	require.Equal(t, "Succeeded", e.wait(r.name()).phase())
	// The allowed decision's record names the grant that allowed it.
	audit = e.cp(http.MethodGet, "/v1/audit?verb=approvals/decide", nil)
	require.Contains(t, string(audit.raw), `"policy":"APIKey admin: owner@*"`, string(audit.raw))
}
