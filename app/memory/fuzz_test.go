package memory_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/resource"
)

// requireInvalid fails unless err is an InvalidRequest API error.
func requireInvalid(t *testing.T, err error) {
	t.Helper()
	if e, ok := apierr.As(err); !ok || e.Code != apierr.CodeInvalidRequest {
		t.Fatalf("want InvalidRequest, got %v", err)
	}
}

func FuzzParseWriteRequest(f *testing.F) {
	for _, s := range []string{
		`{"text":"hello"}`,
		`{"text":"hi","metadata":{"a":1,"b":[1,2],"c":{"d":null}},"scope":{"agent":"bot","conversation":"c-1"},"ttl":"10m"}`,
		`{"memory":"notes","text":"x"}`,
		`{"text":""}`, `{"text":"x","ttl":"-1s"}`, `{"text":"x"} {}`, `{"text":"\u0000"}`, `[]`, ``, `{"text":"x","scope":{"agent":"BAD"}}`,
	} {
		f.Add([]byte(s), "notes")
		f.Add([]byte(s), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		r, err := memory.ParseWriteRequest(body, path)
		if err != nil {
			requireInvalid(t, err)
			return
		}
		if strings.TrimSpace(r.Text) == "" || len(r.Text) > memory.MaxTextBytes || !utf8.ValidString(r.Text) {
			t.Fatalf("accepted text %q", r.Text)
		}
		if !resource.IsDNS1123Label(r.Memory) || (path != "" && r.Memory != path) {
			t.Fatalf("accepted memory %q for path %q", r.Memory, path)
		}
		if r.Scope.Agent != "" && !resource.IsDNS1123Label(r.Scope.Agent) {
			t.Fatalf("accepted agent %q", r.Scope.Agent)
		}
	})
}

func FuzzParseQueryRequest(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"text":"refund policy","limit":5}`, `{"metadata":{"topic":"billing","vip":true,"n":2}}`,
		`{"since":"2026-01-01T00:00:00Z"}`, `{"since":"1h"}`, `{"since":"-1h"}`, `{"limit":-1}`, `{"limit":100000}`,
		`{"metadata":{"a'b":"x"}}`, `{"metadata":{"a":{"b":1}}}`, `{"memory":"x","includeSummarized":true}`,
	} {
		f.Add([]byte(s), "notes")
		f.Add([]byte(s), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		r, err := memory.ParseQueryRequest(body, path)
		if err != nil {
			requireInvalid(t, err)
			return
		}
		if r.Limit < 1 || r.Limit > memory.MaxLimit {
			t.Fatalf("accepted limit %d", r.Limit)
		}
		if len(r.Metadata) > memory.MaxFilterKeys || !resource.IsDNS1123Label(r.Memory) {
			t.Fatalf("accepted %+v", r)
		}
		for k, v := range r.Metadata {
			switch v.(type) {
			case string, float64, bool:
			default:
				t.Fatalf("accepted filter %q = %#v", k, v)
			}
		}
	})
}

func FuzzParseSummarizeRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"keepRecent":3,"olderThan":"24h"}`, `{"keepRecent":-1}`, `{"olderThan":"x"}`, `{"scope":{"conversation":"a\nb"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := memory.ParseSummarizeRequest(body)
		if err != nil {
			requireInvalid(t, err)
			return
		}
		if r.KeepRecent != nil && *r.KeepRecent < 0 {
			t.Fatalf("accepted keepRecent %d", *r.KeepRecent)
		}
	})
}
