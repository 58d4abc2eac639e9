package mcp_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
)

// bearer adds a workload token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a Go SDK client session on /mcp as the token's agent.
func (e *env) connect(token string, opts *sdk.ClientOptions) *sdk.ClientSession {
	e.t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.mcpURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func TestAgentEndpoint(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			e.discover()
			changed := make(chan struct{}, 8)
			progress := make(chan string, 8)
			cs := e.connect(e.token(server.LocalTenant, "bot"), &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
				ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
					progress <- r.Params.Message
				},
			})
			require.Equal(t, []string{"fake.delete_all", "fake.echo", "fake.fail", "fake.picture"}, toolNames(t, cs))

			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fake.echo", Arguments: map[string]any{"text": "via /mcp"}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Equal(t, "via /mcp", res.Content[0].(*sdk.TextContent).Text)
			require.EqualValues(t, 1, e.fake.calls.Load())

			// An agent whose manifest names no MCP server lists none of its
			// tools and cannot call them.
			other := e.connect(e.token(server.LocalTenant, "other"), nil)
			require.Empty(t, toolNames(t, other))
			res, err = other.CallTool(context.Background(), &sdk.CallToolParams{Name: "fake.echo", Arguments: map[string]any{"text": "x"}})
			if err == nil {
				require.True(t, res.IsError)
			}
			require.EqualValues(t, 1, e.fake.calls.Load())

			// A privileged tool pauses for approval; the client hears about
			// it through progress notifications and gets the result once
			// an approver decides.
			done := make(chan *sdk.CallToolResult, 1)
			go func() {
				p := &sdk.CallToolParams{Name: "fake.delete_all", Arguments: map[string]any{}}
				p.SetProgressToken("wait-1")
				r, err := cs.CallTool(context.Background(), p)
				if err != nil {
					r = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
				}
				done <- r
			}()
			var msg string
			select {
			case msg = <-progress:
			case <-time.After(10 * time.Second):
				t.Fatal("no progress notification while the call waits for approval")
			}
			m := regexp.MustCompile(`Approval (\S+)\)`).FindStringSubmatch(msg)
			require.Len(t, m, 2, msg)
			require.EqualValues(t, 1, e.fake.calls.Load())
			r := do(t, http.MethodPost, e.cpURL+"/v1/approvals/"+m[1]+"/decide", e.admin, map[string]any{"decision": "approve", "rationale": "ok"})
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			select {
			case res = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the approved call did not answer")
			}
			require.False(t, res.IsError, "%+v", res.Content)
			require.Equal(t, "deleted", res.Content[0].(*sdk.TextContent).Text)
			require.EqualValues(t, 2, e.fake.calls.Load())

			// Quarantining the server takes its tools away from the list,
			// and the session is told.
			for len(changed) > 0 {
				<-changed
			}
			r = do(t, http.MethodPost, e.mcpURL+"/v1/mcp/fake/quarantine", e.admin, map[string]any{"reason": "test"})
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/tools/list_changed after the quarantine")
			}
			require.Empty(t, toolNames(t, cs))
		})
	}
}
