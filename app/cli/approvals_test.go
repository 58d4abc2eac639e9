package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
)

// breakGlass binds the break-glass role to the admin key, which no API
// key holds otherwise.
const breakGlass = `apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: admin-breakglass}
spec:
  role: breakglass
  subjects: [{kind: APIKey, name: admin}]
`

func TestApprovalCommands(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	refund := func(amount float64) (call, approval string) {
		r := s.call("demo-bot", "demo.refund", map[string]any{"chargeId": "ch_1", "amount": amount}, http.StatusAccepted)
		require.Equal(t, "AwaitingApproval", r.phase())
		return r.name(), "ap-" + strings.TrimPrefix(r.name(), "tc-")
	}
	call1, ap1 := refund(10)
	call2, ap2 := refund(20)
	call3, ap3 := refund(30)
	_, ap4 := refund(40)
	// wait reads a call, waiting for it to finish.
	wait := func(call string) gwResponse {
		return s.gateway(http.MethodGet, "/v1/tool-calls/"+call+"?wait=10s", "demo-bot", nil)
	}
	// A home without a config file: connection settings from flags, and no
	// namespace, so decide uses /v1/approvals/{id}/decide.
	bare := func(args ...string) []string { return append(args, "--server", s.cpURL, "--token", s.admin) }
	bareHome := map[string]string{clientconfig.EnvHome: t.TempDir()}

	steps := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantOut    []string
		wantNotOut []string
		wantErr    []string
		after      func(t *testing.T)
	}{
		{
			name:    "ls shows what is pending",
			args:    []string{"approvals", "ls"},
			wantOut: []string{"NAME", "TOOL-CALL", "AGENT", "TOOL", "SIDE-EFFECT", "STATUS", "REASON", "EXPIRES", "AGE", ap1, call1, ap4, "demo-bot", "demo.refund", "financial", "pending", "tool demo.refund (financial) requires approval", "in 59m"},
		},
		{name: "ls json", args: []string{"approvals", "ls", "-o", "json"}, wantOut: []string{`"kind": "ApprovalList"`, ap2}},
		{name: "ls of another agent", args: []string{"approvals", "ls", "--agent", "flaky-bot"}, wantErr: []string{"No pending approvals found in namespace default."}},
		{name: "ls unknown status", args: []string{"approvals", "ls", "--status", "maybe"}, wantCode: ExitUsage},
		{name: "ls bad output", args: []string{"approvals", "ls", "-o", "xml"}, wantCode: ExitUsage},

		{name: "decide without an id", args: []string{"approvals", "decide", "--decision", "approve"}, wantCode: ExitUsage, wantErr: []string{"--id is required"}},
		{name: "decide with a bad decision", args: []string{"approvals", "decide", "--id", ap1, "--decision", "maybe"}, wantCode: ExitUsage, wantErr: []string{`--decision must be approve or deny, not "maybe"`}},
		{name: "decide with two ids", args: []string{"approvals", "decide", ap1, "--id", ap2, "--decision", "approve"}, wantCode: ExitUsage},
		{name: "decide an unknown approval", args: []string{"approvals", "decide", "--id", "ap-nope", "--decision", "approve"}, wantCode: ExitNotFound, wantErr: []string{`NotFound: approval "ap-nope" not found`}},
		{
			name:    "approve by the call's name",
			args:    []string{"approvals", "decide", "--id", call1, "--decision", "approve", "--reason", "duplicate charge confirmed"},
			wantOut: []string{"approval " + ap1 + " approved by apikey:admin; tool call " + call1 + " resumes\n"},
			after: func(t *testing.T) {
				r := wait(call1)
				require.Equal(t, "Succeeded", r.phase(), "%v", r.body)
				require.Equal(t, 1, strings.Count(s.demoOut.String(), "refund executed #"), s.demoOut.String())
			},
		},
		{name: "a decision is final", args: []string{"approvals", "decide", ap1, "--decision", "deny"}, wantCode: ExitConflict, wantErr: []string{"already decided: approved by apikey:admin"}},
		{
			name: "deny without a namespace", args: bare("approvals", "decide", ap2, "--decision", "deny", "--reason", "not eligible"), env: bareHome,
			wantOut: []string{"approval " + ap2 + " denied by apikey:admin; tool call " + call2 + " is denied\n"},
			after: func(t *testing.T) {
				// The agent waiting on it gets the documented error.
				r := wait(call2)
				require.Equal(t, http.StatusForbidden, r.status, "%v", r.body)
				require.Equal(t, "ApprovalDenied", r.body["error"].(map[string]any)["code"])
				require.Equal(t, call2, r.name())
			},
		},
		{
			name:       "ls after the decisions",
			args:       []string{"approvals", "ls"},
			wantOut:    []string{ap3, ap4},
			wantNotOut: []string{ap1, ap2},
		},
		{
			name:    "ls all, wide",
			args:    []string{"approvals", "ls", "--status", "all", "-o", "wide"},
			wantOut: []string{"DECIDED-BY", "RATIONALE", "duplicate charge confirmed", "not eligible", "approved", "denied"},
		},
		{name: "override needs a reason", args: []string{"approvals", "override", "--id", ap3, "--decision", "approve"}, wantCode: ExitUsage, wantErr: []string{"--reason is required"}},
		{name: "override needs the breakglass role", args: []string{"approvals", "override", "--id", ap3, "--decision", "approve", "--reason", "outage"}, wantCode: ExitRejected, wantErr: []string{"Forbidden"}},
		{
			name: "override with the breakglass role", args: []string{"approvals", "override", "--id", ap3, "--decision", "approve", "--reason", "INC-1: refunds stuck"},
			wantOut: []string{"approval " + ap3 + " approved (break-glass override) by apikey:admin; tool call " + call3 + " resumes\n"},
			after: func(t *testing.T) {
				require.Equal(t, "Succeeded", wait(call3).phase())
				require.Equal(t, 2, strings.Count(s.demoOut.String(), "refund executed #"), s.demoOut.String())
			},
		},
		{name: "decide as json", args: []string{"approvals", "decide", ap4, "--decision", "deny", "-o", "json"}, wantOut: []string{`"kind": "Approval"`, `"status": "denied"`}},
		{name: "nothing pending any more", args: []string{"approvals", "ls"}, wantErr: []string{"No pending approvals found"}},
	}
	for _, st := range steps {
		if st.name == "override with the breakglass role" {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rb.yaml"), []byte(breakGlass), 0o644))
			res := s.run(t, nil, "apply", "-f", filepath.Join(dir, "rb.yaml"))
			require.Equal(t, ExitOK, res.code, res.stderr)
		}
		// The steps build on each other: not parallel.
		t.Run(st.name, func(t *testing.T) {
			res := s.run(t, st.env, st.args...)
			require.Equal(t, st.wantCode, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			for _, w := range st.wantOut {
				require.Contains(t, res.stdout, w)
			}
			for _, w := range st.wantNotOut {
				require.NotContains(t, res.stdout, w)
			}
			for _, w := range st.wantErr {
				require.Contains(t, res.stderr, w)
			}
			if st.after != nil {
				st.after(t)
			}
		})
	}
}
