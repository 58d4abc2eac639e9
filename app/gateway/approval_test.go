package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store/backend"
)

// pending makes a refund that waits for approval and returns the call.
func (e *env) pending(amount float64) resp {
	e.t.Helper()
	r := e.call("payments.refund", map[string]any{"amount": amount}, nil)
	require.Equal(e.t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(e.t, "AwaitingApproval", r.phase())
	require.Equal(e.t, "pending", r.body["spec"].(map[string]any)["approval"].(map[string]any)["status"])
	return r
}

func approvalOf(call string) string { return "ap-" + strings.TrimPrefix(call, "tc-") }

func (e *env) wait(call string) resp {
	e.t.Helper()
	return do(e.t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=10s", e.bot(), nil, nil)
}

func TestApprovalPausesAndResumesOnce(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			r := e.pending(250)
			require.Equal(t, 0, e.tools.count("/refund"))
			ap := approvalOf(r.name())

			list := e.cp(http.MethodGet, "/v1/namespaces/default/approvals?status=pending", nil)
			require.Len(t, list.body["items"], 1, string(list.raw))

			// The bot cannot approve its own call.
			self := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+r.name()+"/approve", e.bot(), map[string]any{"rationale": "me"}, nil)
			require.Equal(t, http.StatusForbidden, self.status, string(self.raw))

			d := e.cp(http.MethodPost, "/v1/approvals/"+ap+"/decide", map[string]any{"decision": "approve", "rationale": "customer verified"})
			require.Equal(t, http.StatusOK, d.status, string(d.raw))
			require.Equal(t, "approved", d.body["status"].(map[string]any)["status"])

			done := e.wait(r.name())
			require.Equal(t, "Succeeded", done.phase(), string(done.raw))
			require.Equal(t, "approved", done.body["spec"].(map[string]any)["approval"].(map[string]any)["status"])
			require.Equal(t, "apikey:admin", done.body["spec"].(map[string]any)["approval"].(map[string]any)["approvedBy"])
			require.Equal(t, "apikey:admin", done.body["spec"].(map[string]any)["approval"].(map[string]any)["decidedBy"])
			require.Equal(t, 1, e.tools.count("/refund"))

			again := e.cp(http.MethodPost, "/v1/namespaces/default/approvals/"+ap+"/decide", map[string]any{"decision": "deny"})
			require.Equal(t, http.StatusConflict, again.status, string(again.raw))
			cancel := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+r.name()+"/cancel", e.bot(), nil, nil)
			require.Equal(t, http.StatusConflict, cancel.status, string(cancel.raw))
			require.Equal(t, 1, e.tools.count("/refund"), "the call ran exactly once")
		})
	}
}

func TestApprovalDenyCancelAndOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")

	denied := e.pending(300)
	d := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(denied.name())+"/decide", map[string]any{"decision": "deny", "rationale": "not eligible"})
	require.Equal(t, http.StatusOK, d.status, string(d.raw))
	// The waiting agent gets the documented error, not a 200.
	got := e.wait(denied.name())
	require.Equal(t, http.StatusForbidden, got.status, string(got.raw))
	require.Equal(t, "ApprovalDenied", got.code(), string(got.raw))
	require.Equal(t, denied.name(), got.header.Get("Warden-Tool-Call"))
	details := got.body["error"].(map[string]any)["details"].(map[string]any)
	require.Equal(t, denied.name(), details["toolCall"])
	require.Equal(t, "apikey:admin", details["decidedBy"])
	// The record says who decided, and nobody approved it.
	rec := e.cp(http.MethodGet, "/v1/namespaces/default/toolcalls/"+denied.name(), nil)
	require.Equal(t, "Denied", rec.phase())
	require.Equal(t, "ApprovalDenied", rec.output()["error"].(map[string]any)["code"])
	appr := rec.body["spec"].(map[string]any)["approval"].(map[string]any)
	require.Equal(t, "denied", appr["status"])
	require.Equal(t, "apikey:admin", appr["decidedBy"])
	require.NotContains(t, appr, "approvedBy")
	// Denied calls free their key: the same refund asks again.
	retry := e.pending(300)
	require.NotEqual(t, denied.name(), retry.name())

	c := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls/"+retry.name()+"/cancel", e.bot(), nil, nil)
	require.Equal(t, http.StatusOK, c.status, string(c.raw))
	require.Equal(t, "Cancelled", c.phase())
	late := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(retry.name())+"/decide", map[string]any{"decision": "approve"})
	require.Equal(t, http.StatusConflict, late.status, string(late.raw))

	// Break-glass needs its own role: an admin is refused, and the
	// refusal is audited.
	third := e.pending(400)
	o := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(third.name())+"/override", map[string]any{"decision": "approve", "rationale": "outage"})
	require.Equal(t, http.StatusForbidden, o.status, string(o.raw))
	bad := e.cp(http.MethodPost, "/v1/approvals/"+approvalOf(third.name())+"/decide", map[string]any{"decision": "maybe"})
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Equal(t, 0, e.tools.count("/refund"))
	audit := e.cp(http.MethodGet, "/v1/audit?verb=approvals/override", nil)
	require.Contains(t, string(audit.raw), "denied")
}

func TestApprovalSurvivesARestart(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storeURL := url(t)
			ts := newToolServer(t)
			st, err := backend.Open(context.Background(), storeURL, backend.Options{})
			require.NoError(t, err)
			first := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, river: true})
			first.apply(fixture(ts.URL))
			r := first.pending(999)
			// The server dies while the call waits.
			first.stop()
			require.NoError(t, st.Close())

			st2, err := backend.Open(context.Background(), storeURL, backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st2.Close() })
			second := start(t, envOptions{st: st2, storeURL: storeURL, tools: ts, admin: first.admin, river: true})
			d := second.cp(http.MethodPost, "/v1/approvals/"+approvalOf(r.name())+"/decide", map[string]any{"decision": "approve"})
			require.Equal(t, http.StatusOK, d.status, string(d.raw))
			// The River resume job runs the call.
			require.Equal(t, "Succeeded", second.wait(r.name()).phase())
			require.Equal(t, 1, ts.count("/refund"), "the tool ran exactly once")
		})
	}
}
