package aos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

// TestServeExamples runs every example of the AOS specification through
// Serve with a governor that allows everything. Two deviations of the
// examples from the schema are ones Warden does not depend on, so the
// requests are accepted and decided: no steps/* example sends the
// context.agent.url the schema requires (the agent's identity comes from
// its credential), and the protocols/MCP examples carry the MCP message as
// params itself rather than under params.message. Every answer is valid
// against the schema (serve checks that), the bare MCP messages are no
// AOS method, and the trailing comma is a parse error whose id is null.
func TestServeExamples(t *testing.T) {
	t.Parallel()
	wants := map[string]int{ // error code; 0 for a decision
		"01-steps_agentTrigger.json":           0,
		"02-steps_toolCallRequest.json":        0,
		"03-steps_toolCallResult.json":         0,
		"04-steps_message.json":                0,
		"05-steps_memoryContextRetrieval.json": 0,
		"06-steps_memoryStore.json":            0,
		"07-steps_message.json":                0,
		"08-protocols_MCP.json":                0,
		// 09, 12 and 15 are the bare MCP requests that 10, 13 and 16 wrap:
		// MCP, not AOS, so a hook endpoint does not know their method.
		"09-tools_call.json":     aos.CodeMethodNotFound,
		"10-protocols_MCP.json":  0,
		"12-tools_call.json":     aos.CodeMethodNotFound,
		"13-protocols_MCP.json":  0,
		"15-tools_call.json":     aos.CodeMethodNotFound,
		"16-protocols_MCP.json":  0,
		"raw-trailing-comma.txt": aos.CodeParseError,
	}
	for _, name := range exampleNames(t) {
		if strings.HasSuffix(name, "-response.json") {
			continue // TestExampleResponses
		}
		code, ok := wants[name]
		require.True(t, ok, "no expectation for %s", name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := example(t, name)
			var got *aos.Request
			gov := govFunc(func(_ context.Context, req *aos.Request, _ any) (aos.Decision, error) {
				got = req
				return aos.Decision{Decision: aos.Allow, Message: "allowed " + req.Method}, nil
			})
			resp := serve(t, gov, raw)
			require.Equal(t, code, errorCode(t, resp), "response %v", resp)
			if code == aos.CodeParseError {
				require.Contains(t, resp, "id")
				require.Nil(t, resp["id"], "JSON-RPC 2.0: the id of a parse error is null")
				return
			}
			require.Equal(t, decodeObject(t, raw)["id"], resp["id"])
			if code != 0 {
				return
			}
			require.Equal(t, "allow", resp["result"].(map[string]any)["decision"])
			// The governor saw the request in the schema's shape, and so does
			// anything Warden derives from it and sends.
			require.NoError(t, aos.ValidateRequest(got), "mended request %s", got.Params)
			var params map[string]any
			require.NoError(t, json.Unmarshal(got.Params, &params))
			if got.Method == aos.MethodMCP {
				msg := params["message"].(map[string]any)
				require.Equal(t, "tools/call", msg["method"])
			} else {
				agent := params["context"].(map[string]any)["agent"].(map[string]any)
				require.True(t, strings.HasPrefix(agent["url"].(string), aos.AgentURLPrefix), "%v", agent)
			}
			// Already in the schema's shape, it is decided the same way.
			resp = serve(t, allowAll, repaired(t, raw))
			require.Equal(t, 0, errorCode(t, resp), "repaired %s: %v", name, resp)
		})
	}
}

// TestServeStillRefusesWhatWardenNeeds: the tolerance covers the agent url
// and the MCP shape only; a request missing what Warden does depend on is
// refused as before.
func TestServeStillRefusesWhatWardenNeeds(t *testing.T) {
	t.Parallel()
	var m map[string]any
	require.NoError(t, json.Unmarshal(example(t, "02-steps_toolCallRequest.json"), &m))
	delete(m["params"].(map[string]any)["toolCallRequest"].(map[string]any), "executionId")
	b, err := json.Marshal(m)
	require.NoError(t, err)
	resp := serve(t, allowAll, b)
	require.Equal(t, aos.CodeInvalidParams, errorCode(t, resp))

	// An MCP request whose params are neither shape is refused too.
	resp = serve(t, allowAll, []byte(`{"jsonrpc":"2.0","id":9,"method":"protocols/MCP","params":{"name":"get_weather"}}`))
	require.Equal(t, aos.CodeInvalidParams, errorCode(t, resp))
}

func TestServePing(t *testing.T) {
	t.Parallel()
	asked := false
	gov := govFunc(func(context.Context, *aos.Request, any) (aos.Decision, error) {
		asked = true
		return aos.Decision{}, errors.New("ping must not reach the governor")
	})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	h, err := aos.NewHandler(gov, aos.HandlerConfig{Now: func() time.Time { return now }, Version: "warden-test"})
	require.NoError(t, err)
	status, body := h.Serve(context.Background(), []byte(`{"jsonrpc":"2.0","id":"p","method":"ping","timestamp":"2026-03-01T11:00:00Z"}`))
	resp := checkResponse(t, status, body)
	require.False(t, asked)
	require.Equal(t, map[string]any{"status": "connected", "version": "warden-test", "timestamp": "2026-03-01T11:00:00Z"}, resp["result"])
}

// TestServeToolHooks checks that the governor gets the typed params of the
// tool hooks, and Step the rest with their params.
func TestServeToolHooks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]any{}
	gov := govFunc(func(_ context.Context, req *aos.Request, p any) (aos.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		if p == nil {
			p = req.Params
		}
		got[req.Method] = p
		return aos.Decision{Decision: aos.Allow, Message: "ok"}, nil
	})

	serve(t, gov, toolCallRequestBody(t))
	p := got[aos.MethodToolCallRequest].(*aos.ToolCallRequestParams)
	require.Equal(t, "c264f381-10cf-4403-bd11-383014c0fcc6", p.ToolCallRequest.ToolID)
	require.Equal(t, "69dbf4c3-be33-4694-a9f0-8d3a824c5d5b", p.ToolCallRequest.ExecutionID)
	require.Equal(t, "Personal assistant", p.Context.Agent.Name)
	require.Equal(t, "OpenAI", p.Context.Agent.Provider.Name)
	require.Equal(t, "e4368263-1797-48ac-9ca8-61a6b4ad9ea3", p.Context.Session.ID)
	require.Equal(t, "2025-01-24T15:32:45.123Z", p.Context.Timestamp)
	require.Nil(t, p.Context.User)
	require.Contains(t, p.Reasoning, "send_sms")
	in, err := aos.InputMap(p.ToolCallRequest.Inputs)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"phone_number": "+337-665-99-06", "conent": "Urgent security alert from Google!!"}, in)

	result := repaired(t, example(t, "03-steps_toolCallResult.json"))
	result = bytes.Replace(result, []byte(`"outputs":[]`), []byte(`"outputs":[{"kind":"text","text":"{\"sent\":true,\"n\":1}"}]`), 1)
	serve(t, gov, result)
	r := got[aos.MethodToolCallResult].(*aos.ToolCallResultParams)
	require.Equal(t, "69dbf4c3-be33-4694-a9f0-8d3a824c5d5b", r.ToolCallResult.ExecutionID)
	require.False(t, r.ToolCallResult.Result.IsError)
	require.Equal(t, map[string]any{"sent": true, "n": json.Number("1")}, aos.OutputValue(r.ToolCallResult.Result.Outputs))

	serve(t, gov, repaired(t, example(t, "04-steps_message.json")))
	params := got["steps/message"].(json.RawMessage)
	require.Contains(t, string(params), "What is the bank account of Acme Corp?")
	require.Contains(t, string(params), `"organization"`, "members the typed params leave out stay in Params")
}

// TestServeExactMemberNames: encoding/json matches struct fields without
// regard to case, so a second member spelled differently could slip an
// unvalidated call past the schema. The governor must see the member the
// schema checked.
func TestServeExactMemberNames(t *testing.T) {
	t.Parallel()
	var m map[string]any
	require.NoError(t, json.Unmarshal(toolCallRequestBody(t), &m))
	params := m["params"].(map[string]any)
	params["toolcallrequest"] = map[string]any{"executionId": "x", "toolId": "delete_everything", "inputs": "not an array"}
	body, err := json.Marshal(m)
	require.NoError(t, err)

	var toolID string
	gov := govFunc(func(_ context.Context, _ *aos.Request, p any) (aos.Decision, error) {
		toolID = p.(*aos.ToolCallRequestParams).ToolCallRequest.ToolID
		return aos.Decision{Decision: aos.Deny, Message: "no"}, nil
	})
	serve(t, gov, body)
	require.Equal(t, "c264f381-10cf-4403-bd11-383014c0fcc6", toolID)
}

func TestServeDecisions(t *testing.T) {
	t.Parallel()
	body := toolCallRequestBody(t)
	sent, e := aos.Decode(body)
	require.Nil(t, e)
	modified := *sent
	modified.Params = json.RawMessage(bytes.Replace(sent.Params, []byte("Urgent security alert from Google!!"), []byte("[REDACTED]"), 1))
	other, err := aos.NewRequest(1, "protocols/MCP", map[string]any{"message": map[string]any{}})
	require.NoError(t, err)
	invalid := *sent
	invalid.Params = json.RawMessage(`{"toolCallRequest":{}}`)

	tests := []struct {
		name     string
		decision aos.Decision
		err      error
		code     int    // 0 for a result
		message  string // the error message, for errors
	}{
		{name: "allow", decision: aos.Decision{Decision: aos.Allow, Message: "ok"}},
		{name: "deny with everything", decision: aos.Decision{
			Decision: aos.Deny, Message: "sms@1 denies send_sms", Reasoning: "premium number",
			ReasonCode: []string{"PolicyDenied"}, Data: map[string]any{"policyId": "sms", "rule": "premium"},
		}},
		{name: "modify", decision: aos.Decision{Decision: aos.Modify, Message: "redacted", ModifiedRequest: &modified}},
		{name: "empty message is still a message", decision: aos.Decision{Decision: aos.Allow}},
		{name: "modify without modifiedRequest", decision: aos.Decision{Decision: aos.Modify, Message: "?"}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "modify into another method", decision: aos.Decision{Decision: aos.Modify, Message: "?", ModifiedRequest: other}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "modify into an invalid request", decision: aos.Decision{Decision: aos.Modify, Message: "?", ModifiedRequest: &invalid}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "allow with modifiedRequest", decision: aos.Decision{Decision: aos.Allow, Message: "?", ModifiedRequest: &modified}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "unknown verdict", decision: aos.Decision{Decision: "ask", Message: "?"}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "data that cannot be encoded", decision: aos.Decision{Decision: aos.Allow, Message: "?", Data: map[string]any{"f": func() {}}}, code: aos.CodeInternalError, message: "Internal error"},
		{name: "governor failure is not echoed", err: errors.New("pq: password authentication failed for user warden"), code: aos.CodeInternalError, message: "Internal error"},
		{name: "governor JSON-RPC error", err: &aos.Error{Code: -32001, Message: "Approval required"}, code: -32001, message: "Approval required"},
		{name: "wrapped JSON-RPC error", err: fmt.Errorf("policy: %w", &aos.Error{Code: aos.CodeInvalidParams, Message: "Invalid parameters", Data: "inputs.phone_number"}), code: aos.CodeInvalidParams, message: "Invalid parameters"},
		{name: "JSON-RPC error with data that cannot be encoded", err: &aos.Error{Code: -32002, Message: "x", Data: make(chan int)}, code: aos.CodeInternalError, message: "Internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			gov := govFunc(func(context.Context, *aos.Request, any) (aos.Decision, error) { return tt.decision, tt.err })
			h, err := aos.NewHandler(gov, aos.HandlerConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			status, raw := h.Serve(context.Background(), body)
			resp := checkResponse(t, status, raw)
			require.Equal(t, "13fa8d6f-8f9f-4d01-ba6b-db99d84d77de", resp["id"])
			require.Equal(t, tt.code, errorCode(t, resp), "response %s", raw)
			require.NotContains(t, string(raw), "password")
			if tt.code != 0 {
				require.Equal(t, tt.message, resp["error"].(map[string]any)["message"])
				if tt.code == aos.CodeInternalError {
					require.NotEmpty(t, logs.String(), "an internal error is logged")
				}
				return
			}
			result := resp["result"].(map[string]any)
			require.Equal(t, string(tt.decision.Decision), result["decision"])
			require.Equal(t, tt.decision.Message, result["message"])
			if tt.decision.ModifiedRequest != nil {
				got, err := json.Marshal(result["modifiedRequest"])
				require.NoError(t, err)
				require.Contains(t, string(got), "[REDACTED]")
				require.NoError(t, aos.ValidateRequest(got))
			}
		})
	}
}

// TestBuildersValidate checks that Result and ErrorResponse build
// responses the schema accepts, for every verdict and every error code,
// with good and bad ids.
func TestBuildersValidate(t *testing.T) {
	t.Parallel()
	modified, err := aos.NewRequest("r-1", aos.MethodPing, nil)
	require.NoError(t, err)
	modified.Timestamp = json.RawMessage(`"2026-03-01T11:00:00Z"`)
	decisions := []aos.Decision{
		{Decision: aos.Allow, Message: "ok"},
		{Decision: aos.Deny, Message: "no", Reasoning: "r", ReasonCode: []string{"a", "b"}, Data: map[string]any{"k": []any{1, "x"}}},
		{Decision: aos.Modify, Message: "changed", ModifiedRequest: modified},
	}
	codes := []int{aos.CodeParseError, aos.CodeInvalidRequest, aos.CodeMethodNotFound, aos.CodeInvalidParams, aos.CodeInternalError, aos.CodeAOSMin, aos.CodeAOSMax}
	ids := []struct {
		raw  json.RawMessage
		want string
	}{
		{raw: json.RawMessage(`"abc"`), want: `"abc"`},
		{raw: json.RawMessage(`42`), want: `42`},
		{raw: nil, want: `null`},
		{raw: json.RawMessage(`null`), want: `null`},
		{raw: json.RawMessage(`1.5`), want: `null`},
		{raw: json.RawMessage(`{"not":"an id"}`), want: `null`},
	}
	for _, id := range ids {
		for _, d := range decisions {
			resp := aos.Result(id.raw, d)
			require.Equal(t, id.want, string(resp.ID))
			b, err := json.Marshal(resp)
			require.NoError(t, err)
			require.NoError(t, aos.ValidateResponse(b), "%s", b)
		}
		for _, code := range codes {
			for _, e := range []*aos.Error{
				{Code: code, Message: "m"},
				{Code: code, Message: "m", Data: aos.ErrorData{Reason: "r", Errors: []aos.FieldError{{Path: "/params", Message: "x"}}}},
			} {
				b, err := json.Marshal(aos.ErrorResponse(id.raw, e))
				require.NoError(t, err)
				require.NoError(t, aos.ValidateResponse(b), "%s", b)
			}
		}
		b, err := json.Marshal(aos.ErrorResponse(id.raw, nil))
		require.NoError(t, err)
		require.Contains(t, string(b), `"code":-32603`)
		require.NoError(t, aos.ValidateResponse(b), "%s", b)
	}
}

func TestNewHandlerNeedsGovernor(t *testing.T) {
	t.Parallel()
	_, err := aos.NewHandler(nil, aos.HandlerConfig{})
	require.Error(t, err)
	status, raw := aos.Serve(context.Background(), nil, toolCallRequestBody(t))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, aos.CodeInternalError, errorCode(t, checkResponse(t, status, raw)))
}
