package execution_test

import (
	"testing"

	"github.com/warden-dev/warden/app/execution"
)

// FuzzParseChatResponse feeds the model router's answer parser arbitrary
// bodies: it never panics, and a parsed tool call always has an id and a
// name.
func FuzzParseChatResponse(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"crm__search","arguments":"{\"q\":1}"}}]}}]}`,
		`{"choices":[]}`, `{"choices":[{"message":{"tool_calls":[{"function":{}}]}}]}`, `null`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, _, err := execution.ParseChatResponse(body)
		if err != nil {
			return
		}
		for _, tc := range msg.ToolCalls {
			if tc.ID == "" || tc.Function.Name == "" {
				t.Fatalf("a tool call without id or name passed: %+v", tc)
			}
		}
	})
}

// FuzzParseArguments: arguments parse to a non-nil object or fail.
func FuzzParseArguments(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `null`, `[1]`, `"x"`, `{"a":`, `  `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := execution.ParseArguments(s)
		if err == nil && in == nil {
			t.Fatal("nil input without an error")
		}
	})
}
