package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/mcp"
	"github.com/warden-dev/warden/app/server"
)

// TestAgentEndpointCallOnSession posts tools/call on an established
// session of /mcp as any client may: the answer is the tool's result as
// JSON, recorded; what the gateway does not answer itself (a tool the
// agent does not have, a request with no session) the SDK still refuses.
func TestAgentEndpointCallOnSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/warden.db")
	e.discover()
	tok := e.token(server.LocalTenant, "bot")
	cs := e.connect(tok, nil)
	post := func(sid, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.mcpURL+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = res.Body.Close() }()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	// The SDK sees the session's first requests (its idle timer).
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	for i, text := range []string{"first", "second"} {
		res, body := post(cs.ID(), `{"jsonrpc":"2.0","id":"c`+text+`","method":"tools/call","params":{"name":"fake.echo","arguments":{"text":"`+text+`"}}}`)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		var answer struct {
			ID     string             `json:"id"`
			Result sdk.CallToolResult `json:"result"`
		}
		// Answered by the gateway itself: JSON, not an event stream.
		require.Equal(t, "application/json", res.Header.Get("Content-Type"))
		require.NoError(t, json.Unmarshal([]byte(body), &answer), body)
		require.Equal(t, "c"+text, answer.ID)
		require.False(t, answer.Result.IsError, body)
		require.Equal(t, text, answer.Result.Content[0].(*sdk.TextContent).Text)
		require.EqualValues(t, i+1, e.fake.calls.Load())
		call, _ := answer.Result.Meta[mcp.MetaToolCall].(string)
		require.Equal(t, "Succeeded", e.toolCall(call).Status["phase"])
	}

	// A tool the agent's list does not have, and a request outside any
	// session, are the SDK's to refuse.
	res, body := post(cs.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fake.nothing","arguments":{}}}`)
	require.Contains(t, body, "fake.nothing", "HTTP %d", res.StatusCode)
	require.Contains(t, body, `"error"`)
	res, body = post("no-such-session", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"fake.echo","arguments":{"text":"x"}}}`)
	require.Equal(t, http.StatusNotFound, res.StatusCode, body)
	require.EqualValues(t, 2, e.fake.calls.Load())
}

// TestUpstreamAnswers calls MCP servers that answer tools/call in each way
// the streamable transport allows: a server-sent event, plain JSON, a
// request of the server on the stream before the result; and a server that forgot
// the gateway's session (it restarted) is dialled again.
func TestUpstreamAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		json   bool
		ping   bool
		forget bool
	}{
		{name: "event stream"},
		{name: "json", json: true},
		{name: "server request first", ping: true},
		{name: "session forgotten", forget: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			srv := sdk.NewServer(&sdk.Implementation{Name: "other", Version: "1"}, nil)
			sdk.AddTool(srv, &sdk.Tool{Name: "echo", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
				func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
					calls.Add(1)
					if tc.ping {
						// Answered on the call's stream, or the call hangs.
						if err := req.Session.Ping(ctx, nil); err != nil {
							return nil, nil, err
						}
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
				})
			newHandler := func() http.Handler {
				return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: tc.json})
			}
			var h atomic.Pointer[http.Handler]
			first := newHandler()
			h.Store(&first)
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
			t.Cleanup(upstream.Close)

			e := newEnv(t, "sqlite://"+t.TempDir()+"/warden.db")
			e.apply(fixture(upstream.URL))
			e.discover()
			bot := e.token(server.LocalTenant, "bot")
			for i, text := range []string{"one", "two"} {
				if i == 1 && tc.forget {
					next := newHandler()
					h.Store(&next)
				}
				r := do(t, http.MethodPost, e.mcpURL+"/v1/mcp/call", bot, rpc("fake.echo", map[string]any{"text": text}))
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
				content := r.result()["content"].([]any)
				require.Equal(t, text, content[0].(map[string]any)["text"])
			}
			require.EqualValues(t, 2, calls.Load())
		})
	}
}
