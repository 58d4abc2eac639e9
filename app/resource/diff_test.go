package resource

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	base := func() *Object {
		o := obj(KindAgent, "bot", map[string]any{
			"framework": map[string]any{"adapter": "langgraph", "version": "1"},
			"tools":     []any{map[string]any{"name": "a.b"}, map[string]any{"name": "c.d"}},
			"policies":  []any{"p1"},
			"requires":  map[string]any{"minContextWindow": int64(8000)},
		})
		o.Metadata.Labels = map[string]string{"app": "bot", "app.kubernetes.io/name": "x"}
		return o
	}
	tests := []struct {
		name string
		old  *Object
		edit func(o *Object)
		want []FieldChange
	}{
		{name: "identical", old: base(), edit: func(*Object) {}, want: nil},
		{
			name: "numbers compare by value, status and resourceVersion ignored",
			old:  base(),
			edit: func(o *Object) {
				o.Spec["requires"] = map[string]any{"minContextWindow": 8000.0}
				o.Status = map[string]any{"x": 1}
				o.Metadata.ResourceVersion = "9"
			},
			want: nil,
		},
		{
			name: "every op",
			old:  base(),
			edit: func(o *Object) {
				o.Spec["framework"].(map[string]any)["version"] = "2"
				o.Spec["tools"] = []any{map[string]any{"name": "a.b", "requiresApproval": true}}
				o.Spec["policies"] = []any{"p1", "p2"}
				o.Spec["systemPrompt"] = "hi"
				delete(o.Spec, "requires")
				o.Metadata.Labels = map[string]string{"app": "bot2", "tier": "gold"}
				o.Metadata.Annotations = map[string]string{"note": "n"}
			},
			want: []FieldChange{
				{Path: "metadata.annotations.note", Op: DiffAdd, New: "n"},
				{Path: "metadata.labels.app", Op: DiffReplace, Old: "bot", New: "bot2"},
				{Path: "metadata.labels[app.kubernetes.io/name]", Op: DiffRemove, Old: "x"},
				{Path: "metadata.labels.tier", Op: DiffAdd, New: "gold"},
				{Path: "spec.framework.version", Op: DiffReplace, Old: "1", New: "2"},
				{Path: "spec.policies[1]", Op: DiffAdd, New: "p2"},
				{Path: "spec.requires", Op: DiffRemove, Old: map[string]any{"minContextWindow": int64(8000)}},
				{Path: "spec.systemPrompt", Op: DiffAdd, New: "hi"},
				{Path: "spec.tools[0].requiresApproval", Op: DiffAdd, New: true},
				{Path: "spec.tools[1]", Op: DiffRemove, Old: map[string]any{"name": "c.d"}},
			},
		},
		{
			name: "type change is one replace",
			old:  base(),
			edit: func(o *Object) { o.Spec["policies"] = "p1" },
			want: []FieldChange{{Path: "spec.policies", Op: DiffReplace, Old: []any{"p1"}, New: "p1"}},
		},
		{
			name: "from nothing",
			old:  nil,
			edit: nil,
			want: []FieldChange{{Path: "spec.x", Op: DiffAdd, New: int64(1)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n *Object
			if tt.edit == nil {
				n = obj(KindAgent, "bot", map[string]any{"x": int64(1)})
			} else {
				n = tt.old.DeepCopy()
				tt.edit(n)
			}
			got := Diff(tt.old, n)
			require.Equal(t, tt.want, got)
			// Diff is deterministic.
			require.Equal(t, got, Diff(tt.old, n))
		})
	}
}

func TestDiffCopiesValues(t *testing.T) {
	t.Parallel()
	n := obj(KindAgent, "bot", map[string]any{"m": map[string]any{"k": "v"}})
	ch := Diff(nil, n)
	require.Len(t, ch, 1)
	ch[0].New.(map[string]any)["k"] = "changed"
	require.Equal(t, "v", n.Spec["m"].(map[string]any)["k"])
}
