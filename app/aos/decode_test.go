package aos_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/aos"
)

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	valid := toolCallRequestBody(t)
	// withParams returns the valid request with params replaced.
	withParams := func(params string) string {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(valid, &m))
		m["params"] = json.RawMessage(params)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	// validParams returns the valid request's params, edited.
	validParams := func(edit func(p map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(valid, &m))
		p := m["params"].(map[string]any)
		edit(p)
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return string(b)
	}

	tests := []struct {
		name   string
		body   string
		code   int
		id     string // the id the error response must carry
		reason string // a substring of data.reason
		path   string // a data.errors path, for schema violations
	}{
		{name: "empty body", body: ``, code: aos.CodeParseError, id: `null`, reason: "empty"},
		{name: "not JSON", body: `steps/toolCallRequest`, code: aos.CodeParseError, id: `null`},
		{name: "trailing comma", body: string(example(t, "raw-trailing-comma.txt")), code: aos.CodeParseError, id: `null`, reason: "at byte"},
		{name: "two values", body: `{"a":1} {"b":2}`, code: aos.CodeParseError, id: `null`, reason: "after the JSON value"},
		{name: "truncated", body: `{"jsonrpc":"2.0","id":1,`, code: aos.CodeParseError, id: `null`},
		{name: "invalid UTF-8", body: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", code: aos.CodeParseError, id: `null`, reason: "UTF-8"},
		{name: "batch", body: `[` + string(valid) + `]`, code: aos.CodeInvalidRequest, id: `null`, reason: "batch"},
		{name: "empty batch", body: `[]`, code: aos.CodeInvalidRequest, id: `null`, reason: "batch"},
		{name: "string", body: `"ping"`, code: aos.CodeInvalidRequest, id: `null`, reason: "object"},
		{name: "null", body: `null`, code: aos.CodeInvalidRequest, id: `null`, reason: "object"},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `1`, reason: `jsonrpc must be "2.0"`},
		{name: "no jsonrpc", body: `{"id":"a","method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `"a"`, reason: "jsonrpc"},
		{name: "no method", body: `{"jsonrpc":"2.0","id":2,"params":{}}`, code: aos.CodeInvalidRequest, id: `2`, reason: "method"},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":2,"method":7}`, code: aos.CodeInvalidRequest, id: `2`, reason: "method"},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `null`, reason: "notifications"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `null`, reason: "string or an integer"},
		{name: "fractional id", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `null`, reason: "string or an integer"},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `null`},
		{name: "huge exponent id", body: `{"jsonrpc":"2.0","id":1e999999999,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`, code: aos.CodeInvalidRequest, id: `null`},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`, code: aos.CodeMethodNotFound, id: `3`, reason: `"tools/call" is not an AOS 0.1.0 method`},
		{name: "A2A spelling the schema does not use", body: `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{}}`, code: aos.CodeMethodNotFound, id: `3`},
		{name: "empty method", body: `{"jsonrpc":"2.0","id":3,"method":""}`, code: aos.CodeMethodNotFound, id: `3`},
		{name: "ping without its top-level timestamp", body: `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"timestamp":"2025-01-24T15:30:45Z"}}`, code: aos.CodeInvalidRequest, id: `4`, path: ""},
		{name: "toolCallRequest without toolCallRequest", body: withParams(validParams(func(p map[string]any) { delete(p, "toolCallRequest") })), code: aos.CodeInvalidParams, id: `"13fa8d6f-8f9f-4d01-ba6b-db99d84d77de"`, path: "/params"},
		{name: "toolCallRequest without params", body: `{"jsonrpc":"2.0","id":5,"method":"steps/toolCallRequest"}`, code: aos.CodeInvalidParams, id: `5`, path: ""},
		{name: "params an array", body: `{"jsonrpc":"2.0","id":5,"method":"steps/toolCallRequest","params":[]}`, code: aos.CodeInvalidParams, id: `5`, path: "/params"},
		{name: "inputs not an array", body: withParams(validParams(func(p map[string]any) { p["toolCallRequest"].(map[string]any)["inputs"] = map[string]any{"to": "x"} })), code: aos.CodeInvalidParams, path: "/params/toolCallRequest/inputs"},
		{name: "timestamp not a date-time", body: withParams(validParams(func(p map[string]any) { p["context"].(map[string]any)["timestamp"] = "yesterday" })), code: aos.CodeInvalidParams, path: "/params/context/timestamp"},
		// Without its url, as in every AOS example, an agent is mended from
		// its id; without an id too there is nothing to mend it from.
		{name: "agent without url or id", body: strings.Replace(string(example(t, "02-steps_toolCallRequest.json")),
			`"id": "1c88ab7d-395f-449a-af51-6028f9e842ea",`, "", 1), code: aos.CodeInvalidParams, path: "/params/context/agent"},
		{name: "too large", body: `{"jsonrpc":"2.0","id":6,"method":"ping","timestamp":"` + strings.Repeat("x", aos.MaxMessageBytes) + `"}`, code: aos.CodeInvalidRequest, id: `null`, reason: "larger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, e := aos.Decode([]byte(tt.body))
			require.Nil(t, req)
			require.NotNil(t, e)
			require.Equal(t, tt.code, e.Code, "error %v", e)
			data, ok := e.Data.(aos.ErrorData)
			require.True(t, ok)
			require.Contains(t, data.Reason, tt.reason)
			if tt.code == aos.CodeMethodNotFound {
				require.Contains(t, data.KnownMethods, aos.MethodToolCallRequest)
			}
			if tt.path != "" || tt.code == aos.CodeInvalidParams {
				var paths []string
				for _, f := range data.Errors {
					paths = append(paths, f.Path)
				}
				require.Contains(t, paths, tt.path)
			}

			// Serve answers the same error, with the id it could read.
			resp := serve(t, allowAll, []byte(tt.body))
			require.Equal(t, tt.code, errorCode(t, resp))
			if tt.id != "" {
				id, err := json.Marshal(resp["id"])
				require.NoError(t, err)
				require.JSONEq(t, tt.id, string(id))
			}
		})
	}
}

func TestDecodeKeepsWhatWasValidated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		wantID string
		params string
	}{
		{
			name:   "integer id written as 7.0 is echoed as written",
			body:   `{"jsonrpc":"2.0","id":7.0,"method":"protocols/MCP","params":{"message":{"method":"tools/call"}}}`,
			wantID: `7.0`,
			params: `{"message":{"method":"tools/call"}}`,
		},
		{
			name:   "big integer id keeps every digit",
			body:   `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"protocols/MCP","params":{"message":{}}}`,
			wantID: `123456789012345678901234567890`,
			params: `{"message":{}}`,
		},
		{
			name:   "ping timestamp the schema leaves untyped is kept as sent",
			body:   `{"jsonrpc":"2.0","id":0,"method":"ping","timestamp":""}`,
			wantID: `0`,
		},
		{
			name:   "ping timestamp may even be a number",
			body:   `{"jsonrpc":"2.0","id":0,"method":"ping","timestamp":5}`,
			wantID: `0`,
		},
		{
			name:   "duplicate members: params hold the one that was validated",
			body:   `{"jsonrpc":"2.0","id":"d","method":"protocols/MCP","params":{"message":{"a":1},"message":{"a":2,"b":"<&>"}}}`,
			wantID: `"d"`,
			params: `{"message":{"a":2,"b":"<&>"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, e := aos.Decode([]byte(tt.body))
			require.Nil(t, e)
			require.Equal(t, tt.wantID, string(req.ID))
			require.Equal(t, tt.params, string(req.Params))
			require.NoError(t, aos.ValidateRequest(req), "a decoded request encodes to a valid one")
		})
	}
}
