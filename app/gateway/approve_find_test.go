package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApproveFindsTheCallsNamespace: POST /v1/tool-calls/{id}/approve
// needs no ?namespace= from a tenant-wide credential, and another
// tenant's key still finds nothing; the Approval carries the call's input.
func TestApproveFindsTheCallsNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	r := e.pending(321)
	ap := e.cp(http.MethodGet, "/v1/namespaces/default/approvals/"+approvalOf(r.name()), nil)
	require.Equal(t, http.StatusOK, ap.status, string(ap.raw))
	require.Equal(t, map[string]any{"amount": float64(321)}, ap.body["spec"].(map[string]any)["input"])

	other := newTenant(t, e.st, "tenant-b")
	refused := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+r.name()+"/approve", other, map[string]any{}, nil)
	require.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, refused.status, string(refused.raw))

	d := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+r.name()+"/approve", e.admin, map[string]any{"rationale": "ok"}, nil)
	require.Equal(t, http.StatusOK, d.status, string(d.raw))
	require.Equal(t, "Succeeded", e.wait(r.name()).phase())
	require.Equal(t, 1, e.tools.count("/refund"))
}
