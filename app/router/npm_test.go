package router_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// EnvNPMSDKs names a node_modules directory holding the npm packages
// openai and @anthropic-ai/sdk (.ci/run installs them at pinned
// versions); TestNPMSDKs skips without it.
const EnvNPMSDKs = "WARDEN_TEST_NPM_SDKS"

// TestNPMSDKs calls the router with the official npm clients, openai and
// @anthropic-ai/sdk, from Node: plain, streamed, a tool call and a
// streamed tool call with each, and an error the OpenAI client raises.
func TestNPMSDKs(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(EnvNPMSDKs)
	if dir == "" {
		t.Skip(EnvNPMSDKs + " is not set: install the clients with `npm install --prefix DIR openai@6.49.0 @anthropic-ai/sdk@1.14.0` and set it to DIR/node_modules")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "package.json")); err != nil {
			t.Skipf("%s has no %s: %v", dir, pkg, err)
		}
	}
	e := newEnv(t, envOptions{})
	script, err := filepath.Abs(filepath.Join("testdata", "npm-sdks.cjs"))
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+dir, "ROUTER_URL="+e.url, "ROUTER_TOKEN="+e.bot())
	var stderr []byte
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "%s", stderr)
	var got map[string]map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)

	weather := map[string]any{"city": "Paris"}
	for _, tc := range []struct {
		name string
		want map[string]any
	}{
		{"openai", map[string]any{"content": "Hello from OpenAI.", "totalTokens": 17.0}},
		{"openaiTools", map[string]any{"name": "get_weather", "arguments": weather, "finish": "tool_calls"}},
		{"openaiStreamTools", map[string]any{"name": "get_weather", "arguments": weather, "finish": "tool_calls"}},
		{"anthropic", map[string]any{"content": "Hello from OpenAI.", "stop": "end_turn", "outputTokens": 5.0}},
		{"anthropicStream", map[string]any{"content": "Hello from OpenAI.", "stop": "end_turn"}},
		{"anthropicTools", map[string]any{"name": "get_weather", "input": weather, "stop": "tool_use"}},
		{"anthropicStreamTools", map[string]any{"name": "get_weather", "input": weather, "stop": "tool_use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, got[tc.name])
		})
	}
	t.Run("openaiStream", func(t *testing.T) {
		s := got["openaiStream"]
		require.Equal(t, "Hello from OpenAI.", s["content"], "%v", s)
		require.Greater(t, s["chunks"], 2.0, "the answer arrives in chunks")
	})
	t.Run("openaiError", func(t *testing.T) {
		require.Equal(t, 403.0, got["openaiError"]["status"], "a model off the agent's route is refused: %v", got["openaiError"])
	})
}
