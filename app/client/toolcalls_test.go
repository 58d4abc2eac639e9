package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
)

const approvalJSON = `{"apiVersion":"warden.dev/v1alpha1","kind":"Approval","metadata":{"name":"ap-1","namespace":"default"},
"spec":{"toolCallRef":{"name":"tc-1"},"agentRef":{"name":"bot"},"toolRef":{"name":"payments.refund"},"sideEffect":"financial"},
"status":{"status":"approved","decidedBy":"apikey:admin","rationale":"ok"}}`

func TestToolCallAndApprovalRequests(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, query, ctype, body string }
	tests := []struct {
		name  string
		reply string
		call  func(ctx context.Context, c *Client) error
		want  seen
	}{
		{
			name: "tool call list with every filter",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ToolCallList(ctx, "support", ToolCallListOptions{Agent: "bot", Tool: "payments.refund", Phase: resource.ToolCallFailed, Since: "1h", Selector: "team=a", Limit: 5, Continue: "x"})
				return err
			},
			want: seen{method: "GET", path: "/v1/namespaces/support/toolcalls", query: "agent=bot&continue=x&labelSelector=team%3Da&limit=5&phase=Failed&since=1h&tool=payments.refund"},
		},
		{
			name: "tool call list without filters",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ToolCallList(ctx, "default", ToolCallListOptions{})
				return err
			},
			want: seen{method: "GET", path: "/v1/namespaces/default/toolcalls"},
		},
		{
			name: "approval list",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ApprovalList(ctx, "default", ApprovalListOptions{Status: resource.ApprovalPending, Agent: "bot", Since: "2026-01-01T00:00:00Z"})
				return err
			},
			want: seen{method: "GET", path: "/v1/namespaces/default/approvals", query: "agent=bot&since=2026-01-01T00%3A00%3A00Z&status=pending"},
		},
		{
			name:  "decide in a namespace",
			reply: approvalJSON,
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ApprovalDecide(ctx, "support", "ap-1", api.DecideRequest{Decision: api.DecisionApprove, Rationale: "verified"})
				return err
			},
			want: seen{method: "POST", path: "/v1/namespaces/support/approvals/ap-1/decide", ctype: ContentTypeJSON, body: `{"decision":"approve","rationale":"verified"}`},
		},
		{
			name:  "decide without a namespace",
			reply: approvalJSON,
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ApprovalDecide(ctx, "", "ap-1", api.DecideRequest{Decision: api.DecisionDeny})
				return err
			},
			want: seen{method: "POST", path: "/v1/approvals/ap-1/decide", ctype: ContentTypeJSON, body: `{"decision":"deny"}`},
		},
		{
			name:  "override",
			reply: approvalJSON,
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ApprovalOverride(ctx, "ap-1", api.DecideRequest{Decision: api.DecisionApprove, Rationale: "outage"})
				return err
			},
			want: seen{method: "POST", path: "/v1/approvals/ap-1/override", ctype: ContentTypeJSON, body: `{"decision":"approve","rationale":"outage"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan seen, 1)
			c := setup(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)}
				reply := tt.reply
				if reply == "" {
					reply = `{"items":[]}`
				}
				_, _ = io.WriteString(w, reply)
			})
			require.NoError(t, tt.call(t.Context(), c))
			require.Equal(t, tt.want, <-got)
		})
	}
}

func TestApprovalDecideDecodesTheAnswer(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/approvals/ap-gone/decide" {
			writeErr(w, 409, apierr.New(apierr.CodeConflict, "approval \"ap-gone\" was already decided"))
			return
		}
		_, _ = io.WriteString(w, approvalJSON)
	})
	ap, err := c.ApprovalDecide(t.Context(), "", "ap-1", api.DecideRequest{Decision: api.DecisionApprove})
	require.NoError(t, err)
	require.Equal(t, "ap-1", ap.Name())
	require.Equal(t, "tc-1", ap.Spec.ToolCallRef.Name)
	require.Equal(t, resource.ApprovalApproved, ap.Status.Status)
	require.Equal(t, "apikey:admin", ap.Status.DecidedBy)

	_, err = c.ApprovalDecide(t.Context(), "", "ap-gone", api.DecideRequest{Decision: api.DecisionApprove})
	require.Equal(t, 409, StatusCode(err))
	_, err = c.ApprovalDecide(t.Context(), "default", "", api.DecideRequest{Decision: api.DecisionApprove})
	require.Error(t, err)
	_, err = c.ApprovalOverride(t.Context(), "", api.DecideRequest{Decision: api.DecisionApprove})
	require.Error(t, err)
}

// TestToolCallListAllFollowsContinue checks that every page is read, also
// past a page the time filter left empty.
func TestToolCallListAllFollowsContinue(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("agent") != "bot" || q.Get("since") != "1h" {
			http.Error(w, "filters lost on "+r.URL.RawQuery, 400)
			return
		}
		cur := q.Get("continue")
		next := map[string]string{"": "p2", "p2": "p3", "p3": ""}[cur]
		items := fmt.Sprintf(`[{"kind":"ToolCall","metadata":{"name":"tc-%s"}}]`, cur)
		if cur == "p2" {
			items = `[]`
		}
		fmt.Fprintf(w, `{"kind":"ToolCallList","metadata":{"resourceVersion":"7","continue":%q},"items":%s}`, next, items)
	})
	l, err := c.ToolCallListAll(t.Context(), "default", ToolCallListOptions{Agent: "bot", Since: "1h"})
	require.NoError(t, err)
	require.Len(t, l.Items, 2)
	require.Equal(t, "tc-p3", l.Items[1].Metadata.Name)
	require.Empty(t, l.Metadata.Continue)

	loop := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"metadata":{"continue":"same"},"items":[]}`)
	})
	_, err = loop.ApprovalListAll(t.Context(), "default", ApprovalListOptions{Continue: "same"})
	require.ErrorContains(t, err, "repeated continue token")
}

func TestDecodeToolCall(t *testing.T) {
	t.Parallel()
	raw := `{"apiVersion":"warden.dev/v1alpha1","kind":"ToolCall","metadata":{"name":"tc-01abc","namespace":"default"},
"spec":{"agentRef":{"name":"bot"},"toolRef":{"name":"payments.refund"},"executionRef":{"name":""},"input":{"amount":250},
"sideEffects":{"level":"financial","idempotencyKey":"3bc9"},"approval":{"required":true,"status":"approved","approvedBy":"apikey:admin"}},
"status":{"phase":"Succeeded","startedAt":"2026-01-01T00:00:00.5Z","completedAt":"2026-01-01T00:00:01.75Z","output":{"refundId":"re_1"}}}`
	var o resource.Object
	require.NoError(t, json.Unmarshal([]byte(raw), &o))
	tc, err := DecodeToolCall(&o)
	require.NoError(t, err)
	require.Equal(t, "tc-01abc", tc.Name())
	require.True(t, tc.Finished())
	require.Equal(t, "apikey:admin", tc.Spec.Approval.ApprovedBy)
	require.Equal(t, "financial", tc.Spec.SideEffects.Level)
	d, ok := tc.Duration()
	require.True(t, ok)
	require.Equal(t, 1250*time.Millisecond, d)

	o.Status = map[string]any{"phase": resource.ToolCallAwaitingApproval}
	tc, err = DecodeToolCall(&o)
	require.NoError(t, err)
	require.False(t, tc.Finished())
	_, ok = tc.Duration()
	require.False(t, ok, "a call that has not run has no duration")

	_, err = DecodeToolCall(&resource.Object{Kind: resource.KindAgent})
	require.Error(t, err)
	_, err = DecodeApproval(&o)
	require.Error(t, err)
}

func TestCallAndApprovalNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ap-01abc", ApprovalName("tc-01abc"))
	require.Equal(t, "ap-01abc", ApprovalName("ap-01abc"))
	require.Equal(t, "tc-01abc", CallName("ap-01abc"))
	require.Empty(t, CallName("hitl-question"))
}
