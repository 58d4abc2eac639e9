package notifications_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/notifications"
)

// TestConsoleApprover: an approver lands on the inbox, sees the paused
// call, opens it, approves with a rationale (CSRF-checked POST), and the
// inbox empties; the explorer and the fleet pages show the call and the
// agent; someone who may not decide sees no Approvals entry and an empty
// inbox; errors are pages.
func TestConsoleApprover(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite://"+t.TempDir()+"/warden.db")
	alice, csrf := e.signIn("alice@example.com")
	dave, _ := e.signIn("dave@example.com")
	call := e.pause(42)
	ap := "ap-" + strings.TrimPrefix(call, "tc-")

	r := e.pageAs(alice, http.MethodGet, "/", nil)
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, "/approvals", r.header.Get("Location"))

	r = e.pageAs(alice, http.MethodGet, "/approvals", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	inbox := string(r.raw)
	require.Contains(t, inbox, "1 pending approval")
	require.Contains(t, inbox, `href="/approvals/default/`+ap+`"`)
	require.Contains(t, inbox, `data-stream="/approvals/stream"`, "the inbox follows the live stream")
	require.Contains(t, inbox, "min left")

	r = e.pageAs(dave, http.MethodGet, "/approvals", nil)
	require.Contains(t, string(r.raw), "0 pending approvals")
	require.NotContains(t, string(r.raw), `href="/approvals">Approvals`)
	r = e.pageAs(dave, http.MethodGet, "/approvals/default/"+ap, nil)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, r.header.Get("Content-Type"), "text/html")
	require.Contains(t, string(r.raw), "Not allowed")

	page := string(e.pageAs(alice, http.MethodGet, "/approvals/default/"+ap, nil).raw)
	for _, want := range []string{"payments.refund", "&#34;amount&#34;: 42", "money@2", "refunds-need-a-person", `value="approve"`, "Notifications"} {
		require.Contains(t, page, want)
	}

	// Without the CSRF token nothing is decided.
	r = e.pageAs(alice, http.MethodPost, "/approvals/default/"+ap+"/decide", url.Values{"decision": {"approve"}})
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, "pending", e.approvalStatus(ap))

	r = e.pageAs(alice, http.MethodPost, "/approvals/default/"+ap+"/decide",
		url.Values{oidc.CSRFField: {csrf}, "decision": {"approve"}, "rationale": {"within the refund policy"}})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), "Your decision is recorded")
	final := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=15s", e.bot(), nil, nil)
	require.Equal(t, "Succeeded", final.str("status", "phase"), string(final.raw))
	require.Len(t, e.ext.got("/refund"), 1)
	require.Contains(t, string(e.pageAs(alice, http.MethodGet, "/approvals", nil).raw), "0 pending approvals")

	// One decision, one audit record, with its rationale.
	require.Equal(t, []string{"approve via console: within the refund policy"}, e.decisionRecords(ap))

	// A second decision: 409 as a page naming who decided.
	r = e.pageAs(alice, http.MethodPost, "/approvals/default/"+ap+"/decide", url.Values{oidc.CSRFField: {csrf}, "decision": {"deny"}})
	require.Equal(t, http.StatusConflict, r.status)
	require.Contains(t, string(r.raw), "alice@example.com")

	r = e.pageAs(alice, http.MethodGet, "/toolcalls?agent=bot&phase=Succeeded", nil)
	require.Contains(t, string(r.raw), call)
	r = e.pageAs(alice, http.MethodGet, "/toolcalls?phase=Failed", nil)
	require.NotContains(t, string(r.raw), call)
	r = e.pageAs(alice, http.MethodGet, "/toolcalls/default/"+call, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), "approve via console: within the refund policy")
	require.Contains(t, string(r.raw), "Idempotency key")
	// One bar per step, each with its duration in text; the approval
	// wait sits between the policy and the invocation.
	page = string(r.raw)
	require.Regexp(t, `(?s)4\.policy.*<th scope="row" id="step-4">approval</th><td class="num">[0-9]+\.[0-9]{3} ms</td><td><meter min="0" max="[0-9]+" value="[0-9]+" aria-labelledby="step-4">`, page)
	for _, step := range []string{"1.resolve", "2.authenticate", "3.classify", "7.invoke", "8.result", "9.output"} {
		require.Contains(t, page, ">"+step+"</th>")
	}
	require.Equal(t, 8, strings.Count(page, "<meter "), "one bar per step: four, the wait, three")

	r = e.pageAs(alice, http.MethodGet, "/fleet/agents", nil)
	require.Contains(t, string(r.raw), `href="/fleet/agents/default/bot"`)
	r = e.pageAs(alice, http.MethodGet, "/fleet/agents/default/bot", nil)
	require.Contains(t, string(r.raw), "Compiled manifest")
	require.Contains(t, string(r.raw), "bot-dev")

	// A failed OIDC callback is a page too.
	r = e.pageAs("", http.MethodGet, "/auth/callback?error=access_denied&state=x", nil)
	require.GreaterOrEqual(t, r.status, 400)
	require.Contains(t, r.header.Get("Content-Type"), "text/html")
	require.Contains(t, string(r.raw), "sign-in")

	for _, path := range []string{"/no-such-page", "/fleet/agents/default/ghost", "/toolcalls/default/tc-ghost"} {
		r = e.pageAs(alice, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, r.status, path)
		require.Contains(t, r.header.Get("Content-Type"), "text/html", path)
		require.Contains(t, string(r.raw), "Not found", path)
	}
}

// TestInvitationEmailed: inviting a member from the console e-mails them
// a sign-in link through the namespace's e-mail channel, and the attempt
// is recorded.
func TestInvitationEmailed(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite://"+t.TempDir()+"/warden.db")
	owner, csrf := e.signInAs("olga@example.com", true)
	r := e.pageAs(owner, http.MethodPost, "/members/invite",
		url.Values{oidc.CSRFField: {csrf}, "email": {"Newcomer@Example.com"}, "role": {"approver"}, "namespace": {"default"}})
	require.Less(t, r.status, 400, string(r.raw))
	msgs := e.smtp.Wait(t, 1, wait)
	require.Equal(t, []string{"newcomer@example.com"}, msgs[0].To)
	text, html := parts(t, msgs[0].Data)
	require.Contains(t, text, "olga@example.com invited you to Warden, tenant default, as approver of namespace default")
	require.Contains(t, text, "http://console.test/signin?tenant=default")
	require.Contains(t, html, "Sign in to accept")
	recs := e.waitDeliveries(notifications.InvitationRecord("newcomer@example.com"), 1)
	require.Equal(t, "delivered", recs[0].Outcome)
	require.Equal(t, "mail", recs[0].Channel)
}

// TestAPIDecisionAuditedOnce: a decision through the API is one audit
// record, the gateway's, naming the channel and the rationale.
func TestAPIDecisionAuditedOnce(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite://"+t.TempDir()+"/warden.db")
	call := e.pause(43)
	ap := "ap-" + strings.TrimPrefix(call, "tc-")
	r := do(t, http.MethodPost, e.cpURL+"/v1/approvals/"+ap+"/decide", e.admin, []byte(`{"decision": "deny", "rationale": "not this one"}`), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, []string{"deny via api: not this one"}, e.decisionRecords(ap))
}

// decisionRecords are the reasons of the approvals/decide audit records
// of approval ap.
func (e *env) decisionRecords(ap string) []string {
	e.t.Helper()
	var out struct {
		Items []struct {
			Resource string `json:"resource"`
			Reason   string `json:"reason"`
			Outcome  string `json:"outcome"`
		} `json:"items"`
	}
	r := do(e.t, http.MethodGet, e.cpURL+"/v1/audit?verb=approvals/decide&limit=1000", e.admin, nil, nil)
	require.NoError(e.t, json.Unmarshal(r.raw, &out), string(r.raw))
	var reasons []string
	for _, it := range out.Items {
		if it.Resource == "Approval/"+ap && it.Outcome == "allowed" {
			reasons = append(reasons, it.Reason)
		}
	}
	return reasons
}

// TestConsoleBreakGlass: a holder of breakglass sees the override and
// uses it with a rationale; the approval is overridden and audited as
// such; an approver without it sees no override.
func TestConsoleBreakGlass(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite://"+t.TempDir()+"/warden.db")
	e.apply(`apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: glass}
spec:
  role: breakglass
  subjects: [{kind: User, name: erin@example.com}]
`)
	erin, csrf := e.signIn("erin@example.com")
	alice, _ := e.signIn("alice@example.com")
	call := e.pause(44)
	ap := "ap-" + strings.TrimPrefix(call, "tc-")
	require.NotContains(t, string(e.pageAs(alice, http.MethodGet, "/approvals/default/"+ap, nil).raw), `name="override"`)
	require.Contains(t, string(e.pageAs(erin, http.MethodGet, "/approvals/default/"+ap, nil).raw), `name="override"`)

	// An override needs a rationale.
	r := e.pageAs(erin, http.MethodPost, "/approvals/default/"+ap+"/decide", url.Values{oidc.CSRFField: {csrf}, "decision": {"approve"}, "override": {"on"}})
	require.Equal(t, http.StatusBadRequest, r.status, string(r.raw))
	require.Equal(t, "pending", e.approvalStatus(ap))

	r = e.pageAs(erin, http.MethodPost, "/approvals/default/"+ap+"/decide",
		url.Values{oidc.CSRFField: {csrf}, "decision": {"approve"}, "override": {"on"}, "rationale": {"incident 42: approvers unreachable"}})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "overridden", e.approvalStatus(ap))
	final := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=15s", e.bot(), nil, nil)
	require.Equal(t, "Succeeded", final.str("status", "phase"), string(final.raw))
	audit := string(do(t, http.MethodGet, e.cpURL+"/v1/audit?verb=approvals/override", e.admin, nil, nil).raw)
	require.Contains(t, audit, "incident 42: approvers unreachable")
}
