package aos

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMethodBranchAgreesWithUnion checks the shortcut ValidateRequest and
// Decode take, one ASOPRequest branch by method instead of the whole
// oneOf, against the union itself.
func TestMethodBranchAgreesWithUnion(t *testing.T) {
	t.Parallel()
	s, err := LoadSchema()
	require.NoError(t, err)
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","timestamp":"2025-01-24T15:30:45Z"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"protocols/MCP","params":{"message":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"protocols/MCP","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"payload":{},"context":{}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"message/send","params":{"payload":{},"context":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"id":1,"method":"tasks/cancel","params":{"payload":{},"context":{}}}`,
		`{"jsonrpc":"2.0","id":1}`,
		`[]`, `"x"`, `1`, `null`,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "examples", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		bodies = append(bodies, string(b))
	}
	for _, body := range bodies {
		v, err := parseJSON([]byte(body))
		require.NoError(t, err)
		union := s.request.Validate(v) == nil
		branch := s.ValidateRequest(v) == nil
		require.Equal(t, union, branch, "body %s", body)
	}
}

// BenchmarkValidate compares validating a parsed steps/toolCallRequest
// against the whole ASOPRequest union with validating it against the one
// branch its method names, which is what Decode does.
func BenchmarkValidate(b *testing.B) {
	s, err := LoadSchema()
	require.NoError(b, err)
	raw, err := os.ReadFile(filepath.Join("testdata", "examples", "02-steps_toolCallRequest.json"))
	require.NoError(b, err)
	v, err := parseJSON(raw)
	require.NoError(b, err)
	v.(map[string]any)["params"].(map[string]any)["context"].(map[string]any)["agent"].(map[string]any)["url"] = "https://agents.example/a"
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("union", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.request.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("branch", func(b *testing.B) {
		b.ReportAllocs()
		sch := s.methods[MethodToolCallRequest]
		for b.Loop() {
			if err := sch.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
