package resource

import "testing"

func BenchmarkDefaultValidateTool(b *testing.B) {
	base := obj(KindTool, "zendesk.search_tickets", map[string]any{"source": "rest", "sideEffect": "read_only",
		"rest":        map[string]any{"url": "https://zendesk.example/api"},
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}}})
	for b.Loop() {
		o := base.DeepCopy()
		Default(o)
		if errs := Validate(o); errs != nil {
			b.Fatal(errs)
		}
	}
}
