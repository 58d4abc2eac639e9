package gateway

import (
	"encoding/json"
	"testing"
	"time"

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

// FuzzStepTimes reads any stored status.steps: load and endWait never
// panic, and what status writes back lists known steps, in order, each
// with a duration or, for an open wait only, a start.
func FuzzStepTimes(f *testing.F) {
	f.Add(`[{"name":"1.resolve","durationMs":0.012},{"name":"approval","durationMs":0,"startedAt":"2026-11-28T10:00:00Z"}]`)
	f.Add(`[{"name":"7.invoke","durationMs":3.5},{"name":"nope"},7,null,{"name":"approval","startedAt":"yesterday"}]`)
	f.Add(`{"name":"1.resolve"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			return
		}
		var st stepTimes
		st.load(v)
		_, _ = endWait(v, time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC))
		last := -1
		for _, e := range st.status() {
			m := e.(map[string]any)
			i := -1
			for j, n := range stepNames {
				if n == m["name"] {
					i = j
				}
			}
			if i <= last {
				t.Fatalf("entry %v out of order or unknown", m)
			}
			last = i
			if _, open := m["startedAt"]; open && i != stepApproval {
				t.Fatalf("only the approval wait may be open: %v", m)
			}
		}
	})
}
