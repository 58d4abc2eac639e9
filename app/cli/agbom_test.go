package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// agbomAgent is an agent of its own, applied twice: the second time with
// a tool more and its model's version moved.
const agbomAgent = `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: bom-model}
spec: {provider: openai, model: gpt-4o-mini, version: "VERSION", capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: bom.read}
spec: {source: function, sideEffect: read_only, inputSchema: {type: object}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: bom.pay}
spec: {source: function, sideEffect: financial, inputSchema: {type: object, properties: {amount: {type: number}}}}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bom-bot}
spec:
  framework: {adapter: langgraph, version: 1.0.0}
  modelRoute: {primary: bom-model}
  tools: TOOLS
`

func TestAgBOMCommands(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	write := func(version, tools string) string {
		path := filepath.Join(t.TempDir(), "bom.yaml")
		body := strings.NewReplacer("VERSION", version, "TOOLS", tools).Replace(agbomAgent)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	res := s.run(t, nil, "apply", "-f", write("2024-07-18", "[{name: bom.read}]"))
	require.Equal(t, ExitOK, res.code, res.stderr)

	steps := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{name: "get cyclonedx", args: []string{"agbom", "get", "bom-bot"},
			wantOut: []string{`"bomFormat": "CycloneDX"`, `"specVersion": "1.6"`, `"machine-learning-model"`, `"name": "bom.read"`}},
		{name: "get spdx", args: []string{"agbom", "get", "bom-bot", "--format", "spdx", "--generation", "1"},
			wantOut: []string{`"spdxVersion": "SPDX-2.3"`, `"name": "gpt-4o-mini"`}},
		{name: "get swid", args: []string{"agbom", "get", "bom-bot", "--format", "swid"},
			wantOut: []string{"<SoftwareIdentity", `name="bom-bot"`}},
		{name: "unknown format", args: []string{"agbom", "get", "bom-bot", "--format", "pdf"}, wantCode: ExitUsage},
		{name: "no agent", args: []string{"agbom", "get"}, wantCode: ExitUsage},
		{name: "unknown agent", args: []string{"agbom", "get", "nobody"}, wantCode: ExitNotFound, wantErr: []string{`agent "nobody" not found`}},
		{name: "diff of a first generation", args: []string{"agbom", "diff", "bom-bot"}, wantCode: ExitFailure, wantErr: []string{"has only generation 1"}},
		{name: "refresh", args: []string{"agbom", "refresh", "bom-bot"}, wantOut: []string{"AgBOM of default/bom-bot generation 1"}},
	}
	for _, st := range steps {
		r := s.run(t, nil, st.args...)
		require.Equal(t, st.wantCode, r.code, "%s: %s %s", st.name, r.stdout, r.stderr)
		for _, w := range st.wantOut {
			require.Contains(t, r.stdout, w, st.name)
		}
		for _, w := range st.wantErr {
			require.Contains(t, r.stderr, w, st.name)
		}
	}

	res = s.run(t, nil, "apply", "-f", write("2024-11-20", "[{name: bom.read}, {name: bom.pay}]"))
	require.Equal(t, ExitOK, res.code, res.stderr)
	r := s.run(t, nil, "agbom", "diff", "bom-bot", "--from", "1", "--to", "2")
	require.Equal(t, ExitOK, r.code, r.stderr)
	for _, w := range []string{
		"AgBOM of default/bom-bot: generation 1 (revision 1", "→ generation 2 (revision 1",
		"1 added, 0 removed, 1 changed",
		"+ tool   bom.pay  sideEffect=financial schemaSha=sha256:",
		"~ model  gpt-4o-mini",
		"version  2024-07-18 → 2024-11-20",
	} {
		require.Contains(t, r.stdout, w, r.stdout)
	}
	r = s.run(t, nil, "agbom", "diff", "bom-bot", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var d struct {
		From  struct{ Generation int64 } `json:"from"`
		To    struct{ Generation int64 } `json:"to"`
		Added []struct{ Ref string }     `json:"added"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	require.Equal(t, int64(1), d.From.Generation)
	require.Equal(t, int64(2), d.To.Generation)
	require.Len(t, d.Added, 1)
	require.Equal(t, "tool:bom.pay", d.Added[0].Ref)
}
