package aos_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/warden-dev/warden/app/aos"
)

// seeds are the examples, their repaired forms and a few malformed bodies.
func seeds(f *testing.F) {
	for _, name := range exampleNames(f) {
		raw := example(f, name)
		f.Add(raw)
		if json.Valid(raw) {
			f.Add(repaired(f, raw))
		}
	}
	for _, s := range []string{
		``, `[]`, `null`, `{}`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`,
		`{"jsonrpc":"2.0","id":"x","method":"protocols/MCP","params":{"message":{},"Message":1}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecode: Decode never panics, returns exactly one of a request and an
// error, uses only the JSON-RPC codes it documents, and whatever it
// accepts encodes to a request the schema accepts.
func FuzzDecode(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := aos.Decode(body)
		if (req == nil) == (e == nil) {
			t.Fatalf("Decode(%q) = %v, %v: want exactly one", body, req, e)
		}
		if e != nil {
			switch e.Code {
			case aos.CodeParseError, aos.CodeInvalidRequest, aos.CodeMethodNotFound, aos.CodeInvalidParams:
			default:
				t.Fatalf("Decode(%q): unexpected code %d", body, e.Code)
			}
			return
		}
		if err := aos.ValidateRequest(req); err != nil {
			t.Fatalf("Decode(%q) accepted a request that encodes invalid: %v", body, err)
		}
	})
}

// FuzzServe: whatever the body, Serve answers 200 with one JSON-RPC
// response that the schema accepts, echoing the id of any request it
// could decode.
func FuzzServe(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		status, resp := aos.Serve(context.Background(), allowAll, body)
		if status != 200 {
			t.Fatalf("Serve(%q) status %d", body, status)
		}
		if !json.Valid(resp) {
			t.Fatalf("Serve(%q) = %q: not JSON", body, resp)
		}
		if err := aos.ValidateResponse(resp); err != nil {
			t.Fatalf("Serve(%q) = %s: invalid response: %v", body, resp, err)
		}
		if req, e := aos.Decode(body); e == nil {
			var r struct{ ID json.RawMessage }
			if err := json.Unmarshal(resp, &r); err != nil || string(r.ID) != string(req.ID) {
				t.Fatalf("Serve(%q) answered id %s, want %s", body, r.ID, req.ID)
			}
		}
	})
}
