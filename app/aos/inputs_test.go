package aos_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

func TestInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inputs []aos.ToolArgumentValue
		object map[string]any
	}{
		{name: "none", inputs: []aos.ToolArgumentValue{}, object: map[string]any{}},
		{
			name: "every JSON type, sorted by name",
			inputs: []aos.ToolArgumentValue{
				{Name: "a", Value: "text"},
				{Name: "b", Value: json.Number("12345678901234567890")},
				{Name: "c", Value: true},
				{Name: "d", Value: nil},
				{Name: "e", Value: []any{"x", json.Number("1")}},
				{Name: "f", Value: map[string]any{"nested": map[string]any{"k": "v"}}},
			},
			object: map[string]any{
				"a": "text", "b": json.Number("12345678901234567890"), "c": true, "d": nil,
				"e": []any{"x", json.Number("1")}, "f": map[string]any{"nested": map[string]any{"k": "v"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := aos.InputMap(tt.inputs)
			require.NoError(t, err)
			require.Equal(t, tt.object, got)
			require.Equal(t, tt.inputs, aos.Inputs(tt.object))
		})
	}

	_, err := aos.InputMap([]aos.ToolArgumentValue{{Name: "to", Value: "a"}, {Name: "to", Value: "b"}})
	require.ErrorContains(t, err, `inputs[1]: duplicate input "to"`)

	// Inputs build a request the schema accepts.
	p := aos.ToolCallRequestParams{
		Context: aos.StepContext{
			Agent: aos.Agent{
				ID: "a-1", Name: "Payments agent", URL: "https://agents.example/payments",
				Instructions: "pay", Version: "1", Provider: aos.AgentProvider{Name: "OpenAI", URL: "https://openai.com/"},
			},
			Session:   aos.Session{ID: "s-1"},
			TurnID:    "t-1",
			StepID:    "st-1",
			Timestamp: "2026-03-01T11:00:00Z",
			User:      &aos.User{ID: "u-1", Email: "user@company.io"},
		},
		ToolCallRequest: aos.ToolCallRequest{
			ExecutionID: "e-1", ToolID: "send_sms",
			Inputs: aos.Inputs(map[string]any{"to": "+33", "body": "hi", "retries": 2}),
		},
	}
	req, err := aos.NewRequest("c-1", aos.MethodToolCallRequest, p)
	require.NoError(t, err)
	require.NoError(t, aos.ValidateRequest(req))
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result any
		text   []string
		back   any // what OutputValue returns; result when nil
	}{
		{name: "nothing", result: nil, text: []string{}},
		{name: "object", result: map[string]any{"sent": true, "to": "<a&b>"}, text: []string{`{"sent":true,"to":"<a&b>"}`}},
		{name: "number stays exact", result: json.Number("12345678901234567890"), text: []string{`12345678901234567890`}},
		{name: "string that looks like a number stays a string", result: "42", text: []string{`"42"`}},
		{name: "array", result: []any{"a", json.Number("1")}, text: []string{`["a",1]`}},
		{name: "struct", result: struct {
			ID string `json:"id"`
		}{ID: "x"}, text: []string{`{"id":"x"}`}, back: map[string]any{"id": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts, err := aos.Outputs(tt.result)
			require.NoError(t, err)
			texts := []string{}
			for _, p := range parts {
				require.Equal(t, "text", p.Kind)
				texts = append(texts, p.Text)
			}
			require.Equal(t, tt.text, texts)
			want := tt.back
			if want == nil {
				want = tt.result
			}
			require.Equal(t, want, aos.OutputValue(parts))
		})
	}

	_, err := aos.Outputs(func() {})
	require.Error(t, err)

	// Parts written by someone else: text that is not JSON stays text.
	require.Equal(t, "plain words", aos.OutputValue([]aos.TextPart{{Text: "plain words"}}))
	require.Equal(t, []any{"plain", map[string]any{"a": json.Number("1")}},
		aos.OutputValue([]aos.TextPart{{Kind: "text", Text: "plain"}, {Kind: "text", Text: `{"a":1}`}}))
}
