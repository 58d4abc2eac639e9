package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/warden-dev/warden/app/mcp"
)

// FuzzParseToolCall: the parser never panics, and what it accepts is a
// tools/call with a string or number id, a name and an object of
// arguments.
func FuzzParseToolCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fake.echo","_meta":{"progressToken":3}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1}]`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}} trailing`,
		``, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tc, rerr := mcp.ParseToolCall(body)
		if rerr != nil {
			if rerr.Code >= 0 || rerr.Message == "" {
				t.Fatalf("bad error %+v", rerr)
			}
			return
		}
		if tc.Name == "" || tc.Arguments == nil {
			t.Fatalf("accepted without name or arguments: %q", body)
		}
		var id any
		if err := json.Unmarshal(tc.ID, &id); err != nil {
			t.Fatalf("id %q is not JSON", tc.ID)
		}
		switch id.(type) {
		case string, float64:
		default:
			t.Fatalf("id %q is neither a string nor a number", tc.ID)
		}
	})
}
