package aos_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

func TestSchemaMethods(t *testing.T) {
	t.Parallel()
	s, err := aos.DefaultSchema()
	require.NoError(t, err)
	require.Equal(t, "0.1.0", s.Version)
	// Read from the schema's ASOPRequest branches. The A2A spellings are
	// the schema's own: "task/get" and "task/pushNotificationConfig/…"
	// where A2A itself says "tasks/…", so "tasks/get" is not a method here.
	require.Equal(t, []string{
		"message/send",
		"message/stream",
		"ping",
		"protocols/MCP",
		"steps/agentTrigger",
		"steps/knowledgeRetrieval",
		"steps/memoryContextRetrieval",
		"steps/memoryStore",
		"steps/message",
		"steps/toolCallRequest",
		"steps/toolCallResult",
		"task/get",
		"task/pushNotificationConfig/get",
		"task/pushNotificationConfig/set",
		"tasks/cancel",
		"tasks/resubscribe",
	}, s.Methods())
	require.True(t, s.Knows(aos.MethodToolCallRequest))
	require.False(t, s.Knows("tasks/get"))
}

func TestLoadSchemaCompilesAnew(t *testing.T) {
	t.Parallel()
	a, err := aos.LoadSchema()
	require.NoError(t, err)
	b, err := aos.DefaultSchema()
	require.NoError(t, err)
	require.NotSame(t, a, b)
	require.Equal(t, a.Methods(), b.Methods())
}

func TestValidateRequestForms(t *testing.T) {
	t.Parallel()
	body := toolCallRequestBody(t)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(body, &generic))
	req, e := aos.Decode(body)
	require.Nil(t, e)

	tests := []struct {
		name string
		raw  any
	}{
		{name: "bytes", raw: body},
		{name: "raw message", raw: json.RawMessage(body)},
		{name: "generic value with float64 numbers", raw: generic},
		{name: "decoded request", raw: req},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, aos.ValidateRequest(tt.raw))
		})
	}

	require.Error(t, aos.ValidateRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"steps/toolCallRequest","params":{}}`)))
	require.Error(t, aos.ValidateRequest([]byte(`not json`)))
	require.Error(t, aos.ValidateRequest("a string is a JSON value, not a request"))
	require.Error(t, aos.ValidateRequest(func() {}), "values encoding/json cannot encode are errors")
}

// TestExampleResponses validates the example responses as they are
// printed in the AOS specification.
func TestExampleResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		valid bool
		why   string
	}{
		{file: "11-response.json", valid: true},
		{
			file: "14-response.json",
			why: "its modifiedRequest is a protocols/MCP request with the MCP message as params, " +
				"while the schema's MCPMessage requires params.message; modifiedRequest must be an " +
				"ASOPRequest, so the whole response fails",
		},
		{
			file:  "17-response.json",
			valid: true,
			why:   `valid, though its message ("Deny message/send.") names another method than the protocols/MCP request 16 it answers`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			err := aos.ValidateResponse(example(t, tt.file))
			if tt.valid {
				require.NoError(t, err)
				return
			}
			require.Error(t, err, tt.why)
			require.Contains(t, err.Error(), "/result/modifiedRequest/params")
			// Mended the way repaired mends requests, it validates.
			var m map[string]any
			require.NoError(t, json.Unmarshal(example(t, tt.file), &m))
			mr := m["result"].(map[string]any)["modifiedRequest"].(map[string]any)
			mr["params"] = map[string]any{"message": mr["params"]}
			require.NoError(t, aos.ValidateResponse(m))
		})
	}
}
