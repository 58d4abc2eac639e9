package gateway

import (
	"encoding/json"
	"testing"

	"github.com/warden-dev/warden/app/apierr"
)

// FuzzDecodeCallRequest: the tool-call request decoder never panics, and
// either accepts a body whose input is an object or refuses it with
// InvalidRequest.
func FuzzDecodeCallRequest(f *testing.F) {
	for _, s := range []string{
		`{"tool": "crm.search", "input": {"query": "x"}}`,
		`{"tool": "crm.search", "input": {"query": "x"}, "execution": "ex-1", "force": true, "wait": "30s"}`,
		`{"tool": "crm.search", "input": [1]}`,
		`{"tool": "crm.search", "input": null}`,
		`{"tool": "crm.search", "input": {}, "agent": "admin"}`,
		`{"tool": "crm.search", "input": {}} {"tool": "x"}`,
		`{"tool": 5}`,
		`{"wait": "-1s"}`,
		``,
		`{"tool": "crm.search", "input": {"a": {"b": [1, 2, {"c": "\u0000"}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeCallRequest(body)
		if err != nil {
			e, ok := apierr.As(err)
			if !ok || e.Code != apierr.CodeInvalidRequest {
				t.Fatalf("error %v is not InvalidRequest", err)
			}
			return
		}
		if _, err := json.Marshal(req.Input); err != nil {
			t.Fatalf("accepted input does not encode: %v", err)
		}
		if _, err := IdempotencyKey("a", req.Tool, req.Input); err != nil {
			t.Fatalf("accepted input has no idempotency key: %v", err)
		}
	})
}
