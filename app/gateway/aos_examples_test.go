package gateway_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAOSExamplesAreDecided posts every request example of the AOS authors
// (app/aos/testdata/examples, a copy of the specification's) to the hook
// endpoint as an agent: each steps/* and protocols/MCP request gets a
// decision, although none sends the context.agent.url the schema requires
// and the MCP ones carry the MCP message directly in params.
func TestAOSExamplesAreDecided(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+t.TempDir()+"/w.db")
	dir := filepath.Join("..", "aos", "testdata", "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	decided := 0
	for _, f := range files {
		name := filepath.Base(f)
		if !strings.Contains(name, "steps_") && !strings.Contains(name, "protocols_MCP") {
			continue
		}
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		r := do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), body, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", name, r.raw)
		require.NotContains(t, r.body, "error", "%s: %s", name, r.raw)
		res, ok := r.body["result"].(map[string]any)
		require.True(t, ok, "%s: %s", name, r.raw)
		require.Contains(t, []any{"allow", "deny", "modify"}, res["decision"], "%s: %s", name, r.raw)
		decided++
	}
	require.Equal(t, 11, decided, "seven steps/* and four protocols/MCP examples")

	raw, err := os.ReadFile(filepath.Join(dir, "raw-trailing-comma.txt"))
	require.NoError(t, err)
	r := do(t, http.MethodPost, e.gwURL+"/v1/hooks/aos", e.bot(), raw, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.raw), `"id":null`)
	require.Equal(t, float64(-32700), r.body["error"].(map[string]any)["code"])
}
