package agbom

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

// fiftyTools returns the fixture with its agent given 50 tools, each with
// an input schema of a few properties, and the compiled manifest.
func fiftyTools(tb testing.TB) ([]*resource.Object, *resource.Object) {
	tb.Helper()
	objs := loadFixture(tb)
	agent := find(objs, resource.KindAgent, "support-bot")
	tools := []any{}
	for i := range 50 {
		name := fmt.Sprintf("svc%02d.action", i)
		objs = append(objs, &resource.Object{
			APIVersion: resource.GroupVersion, Kind: resource.KindTool,
			Metadata: resource.ObjectMeta{Name: name, Namespace: "support", Generation: 1, UID: "uid-" + name},
			Spec: map[string]any{"source": "rest", "sideEffect": resource.SideEffectClasses()[i%7],
				"description": "Tool number " + name, "rest": map[string]any{"url": "https://api.example.com/" + name},
				"inputSchema": map[string]any{"type": "object", "required": []any{"id"}, "properties": map[string]any{
					"id": map[string]any{"type": "string"}, "amount": map[string]any{"type": "number", "minimum": 0.0},
					"note": map[string]any{"type": "string", "maxLength": 500.0}}}},
		})
		tools = append(tools, map[string]any{"name": name})
	}
	agent.Spec["tools"] = tools
	return objs, compileManifest(tb, objs, "support-bot")
}

// BenchmarkAgBOM50Tools measures an AgBOM of an agent with 50 tools: the
// BOM built from the manifest and its resources (in memory, so the figure
// is the AgBOM's own work), then rendered in each format. The target is
// 5 ms (docs/performance.md).
func BenchmarkAgBOM50Tools(b *testing.B) {
	objs, m := fiftyTools(b)
	r := &fakeReader{objs: append(objs, m)}
	ctx := context.Background()
	bom, err := Build(ctx, r, m, testInfo)
	require.NoError(b, err)
	// agent, framework, 3 models (one embeds), 50 tools, 1 MCP server,
	// memory, 2 policies, a RAG index and its 3 knowledge sources
	require.Equal(b, 63, len(bom.Components))
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(ctx, r, m, testInfo); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, format := range Formats() {
		b.Run("build+"+format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bom, err := Build(ctx, r, m, testInfo)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Render(bom, format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
