package agbom

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

func find(objs []*resource.Object, kind, name string) *resource.Object {
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	return nil
}

func TestBuildComponentsAndDependencies(t *testing.T) {
	t.Parallel()
	b := fixtureBOM(t)
	refs := make([]string, len(b.Components))
	for i, c := range b.Components {
		refs[i] = c.Ref
	}
	require.Equal(t, []string{
		"agent:support-bot", "framework:openai-agents", "knowledge-source:faq", "knowledge-source:handbook",
		"knowledge-source:help-center", "mcp-server:filesystem", "mcp-server:github",
		"memory:support-bot-working", "model:claude-sonnet", "model:embedder", "model:gpt-4o", "policy:platform/pii-output",
		"policy:support/refund-limits", "rag-index:support-kb", "tool:files.read", "tool:slack.notify", "tool:stripe.refund",
		"tool:zendesk.search_tickets",
	}, refs)

	kb := b.Component("rag-index:support-kb")
	require.Equal(t, "http://127.0.0.1:8085", kb.Endpoint)
	require.True(t, strings.HasPrefix(kb.Hash, "sha256:"))
	embedding, _ := kb.Property("embeddingModel")
	require.Equal(t, "openai:text-embedding-3-small", embedding)
	embedder := b.Component("model:embedder")
	require.Equal(t, "text-embedding-3-small", embedder.Name)
	require.Equal(t, "1", embedder.Version)
	use, _ := embedder.Property("use")
	require.Equal(t, "embedding", use)
	for ref, want := range map[string]map[string]string{
		"knowledge-source:faq":         {"type": "inline", "documents": "1"},
		"knowledge-source:handbook":    {"type": "file", "path": "handbook"},
		"knowledge-source:help-center": {"type": "url", "url": "https://help.example.com/articles"},
	} {
		src := b.Component(ref)
		require.True(t, strings.HasPrefix(src.Hash, "sha256:"), ref)
		for name, value := range want {
			got, _ := src.Property(name)
			require.Equal(t, value, got, "%s %s", ref, name)
		}
	}

	model := b.Component("model:gpt-4o")
	require.Equal(t, "gpt-4o", model.Name)
	require.Equal(t, "openai", model.Provider)
	require.Equal(t, "2024-08-06", model.Version)
	route, _ := model.Property("route")
	require.Equal(t, "primary", route)

	refund := b.Component("tool:stripe.refund")
	side, _ := refund.Property("sideEffect")
	require.Equal(t, "financial", side)
	approval, _ := refund.Property("requiresApproval")
	require.Equal(t, "true", approval)
	require.True(t, strings.HasPrefix(refund.Hash, "sha256:"))
	schemaSha, _ := refund.Property("schemaSha")
	require.Equal(t, refund.Hash, schemaSha)

	fs := b.Component("mcp-server:filesystem")
	require.Equal(t, "1.4.2", fs.Version)
	require.True(t, strings.HasPrefix(fs.Hash, "sha256:"))
	trust, _ := fs.Property("trustScore")
	require.Equal(t, "0.8", trust)
	gh := b.Component("mcp-server:github")
	pinned, _ := gh.Property("pinned")
	require.Equal(t, "false", pinned)

	policy := b.Component("policy:platform/pii-output")
	require.Equal(t, "1", policy.Version, "a selector-bound policy of another namespace is found")
	require.NotEmpty(t, policy.Hash)
	require.Equal(t, "2", b.Component("policy:support/refund-limits").Version)

	require.Equal(t, []Dependency{
		{Ref: "agent:support-bot", DependsOn: []string{
			"framework:openai-agents", "mcp-server:github", "memory:support-bot-working", "model:claude-sonnet",
			"model:gpt-4o", "policy:platform/pii-output", "policy:support/refund-limits", "rag-index:support-kb", "tool:files.read",
			"tool:slack.notify", "tool:stripe.refund", "tool:zendesk.search_tickets",
		}},
		{Ref: "rag-index:support-kb", DependsOn: []string{"knowledge-source:faq", "knowledge-source:handbook", "knowledge-source:help-center", "model:embedder"}},
		{Ref: "tool:files.read", DependsOn: []string{"mcp-server:filesystem"}},
	}, b.Dependencies)
	require.Equal(t, "0.9.0-test", b.WardenVersion)
	require.Equal(t, "2026-01-02T03:04:06Z", b.CompiledAt)
	require.Equal(t, int64(1), b.Revision)
}

// TestBuildLeavesSecretsOut: credentials and queries in URLs of the
// resources never reach a document.
func TestBuildLeavesSecretsOut(t *testing.T) {
	t.Parallel()
	b := fixtureBOM(t)
	for _, format := range Formats() {
		doc, err := Render(b, format)
		require.NoError(t, err)
		for _, secret := range []string{"secret", "leak", "user:"} {
			require.NotContains(t, string(doc), secret, format)
		}
	}
	require.Equal(t, "https://api.anthropic.com/v1", b.Component("model:claude-sonnet").Endpoint)
}

// TestBuildOlderGeneration: once the agent has moved on, its old manifest's
// models are found by route id, and deleted resources leave what the
// manifest says.
func TestBuildOlderGeneration(t *testing.T) {
	t.Parallel()
	objs := loadFixture(t)
	m := compileManifest(t, objs, "support-bot")
	agent := find(objs, resource.KindAgent, "support-bot")
	agent.Metadata.Generation = 2
	agent.Spec["modelRoute"] = map[string]any{"primary": "claude-sonnet"}
	var kept []*resource.Object
	for _, o := range objs {
		if o.Kind != resource.KindTool || o.Metadata.Name != "stripe.refund" {
			kept = append(kept, o)
		}
	}
	b, err := Build(context.Background(), &fakeReader{objs: append(kept, m)}, m, Info{WardenVersion: "x"})
	require.NoError(t, err)
	require.NotNil(t, b.Component("model:gpt-4o"), "found by route id openai:gpt-4o")
	require.Equal(t, "2024-08-06", b.Component("model:gpt-4o").Version)
	refund := b.Component("tool:stripe.refund")
	require.NotNil(t, refund, "a deleted tool keeps its component")
	side, _ := refund.Property("sideEffect")
	require.Equal(t, "financial", side)
	require.Equal(t, "2026-01-02T03:04:05Z", b.CompiledAt, "no compile time given: the manifest's creationTimestamp")
}

func TestBuildRefusesOtherKinds(t *testing.T) {
	t.Parallel()
	objs := loadFixture(t)
	_, err := Build(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"), Info{})
	require.ErrorIs(t, err, ErrInvalid)
}

// nextGeneration changes the fixture as a second apply would: a tool
// added to the agent (generation 2), the primary model's version moved and
// the bound policy's version bumped.
func nextGeneration(t *testing.T, objs []*resource.Object) []*resource.Object {
	t.Helper()
	objs = append(objs, &resource.Object{
		APIVersion: resource.GroupVersion, Kind: resource.KindTool,
		Metadata: resource.ObjectMeta{Name: "github.create_issue", Namespace: "support", Generation: 1},
		Spec:     map[string]any{"source": "function", "sideEffect": "external_write", "inputSchema": map[string]any{"type": "object"}},
	})
	agent := find(objs, resource.KindAgent, "support-bot")
	agent.Metadata.Generation = 2
	agent.Spec["tools"] = append(agent.Spec["tools"].([]any), map[string]any{"name": "github.create_issue"})
	find(objs, resource.KindModel, "gpt-4o").Spec["version"] = "2024-11-20"
	find(objs, resource.KindPolicy, "refund-limits").Spec["version"] = "3"
	return objs
}

func TestCompareGenerations(t *testing.T) {
	t.Parallel()
	objs := loadFixture(t)
	m1 := compileManifest(t, objs, "support-bot")
	b1, err := Build(context.Background(), &fakeReader{objs: append(objs, m1)}, m1, testInfo)
	require.NoError(t, err)

	objs = nextGeneration(t, objs)
	m2 := compileManifest(t, objs, "support-bot")
	m2.Metadata.Generation = 2
	require.Equal(t, "support-bot-g2", m2.Metadata.Name)
	b2, err := Build(context.Background(), &fakeReader{objs: append(objs, m2)}, m2, Info{WardenVersion: "0.9.1-test"})
	require.NoError(t, err)

	d := Compare(b1, b2)
	require.Equal(t, int64(1), d.From.Generation)
	require.Equal(t, int64(2), d.To.Generation)
	require.Equal(t, "0.9.1-test", d.To.WardenVersion)
	require.Len(t, d.Added, 1)
	require.Equal(t, "tool:github.create_issue", d.Added[0].Ref)
	require.Empty(t, d.Removed)

	changed := map[string][]FieldChange{}
	for _, c := range d.Changed {
		changed[c.Ref] = c.Fields
	}
	require.Len(t, changed, 2, "%+v", d.Changed)
	require.Contains(t, changed["model:gpt-4o"], FieldChange{Field: "version", From: "2024-08-06", To: "2024-11-20"})
	require.Contains(t, fieldNames(changed["model:gpt-4o"]), "hash")
	require.Contains(t, changed["policy:support/refund-limits"], FieldChange{Field: "version", From: "2", To: "3"})
	require.Contains(t, changed["policy:support/refund-limits"], FieldChange{Field: "ref", From: "refund-limits@2", To: "refund-limits@3"})

	same := Compare(b1, b1)
	require.True(t, same.Empty())

	back := Compare(b2, b1)
	require.Len(t, back.Removed, 1)
	require.Equal(t, "tool:github.create_issue", back.Removed[0].Ref)
}

func fieldNames(fs []FieldChange) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Field
	}
	return out
}

func TestParseManifestName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		agent string
		gen   int64
		ok    bool
	}{
		{"support-bot-g12", "support-bot", 12, true},
		{"a-g1", "a", 1, true},
		{"gpt-g4-g2", "gpt-g4", 2, true},
		{"a-g0", "", 0, false},
		{"-g1", "", 0, false},
		{"agent", "", 0, false},
		{"a-gx", "", 0, false},
	} {
		agent, gen, ok := ParseManifestName(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.agent, agent, tc.in)
		require.Equal(t, tc.gen, gen, tc.in)
	}
}
