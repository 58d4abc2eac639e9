package resource

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func obj(kind, name string, spec map[string]any) *Object {
	info, _ := LookupKind(kind)
	return &Object{APIVersion: info.APIVersion, Kind: kind, Metadata: ObjectMeta{Name: name}, Spec: spec}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        *Object
		namespace string
		want      map[string]any
	}{
		{
			name:      "agent with tools",
			in:        obj(KindAgent, "bot", map[string]any{"framework": map[string]any{"adapter": "langgraph"}, "modelRoute": map[string]any{"primary": "gpt"}, "tools": []any{map[string]any{"name": "a.b"}}}),
			namespace: "default",
			want: map[string]any{
				"framework":  map[string]any{"adapter": "langgraph", "version": "latest", "image": "ghcr.io/warden-dev/adapter-langgraph:latest"},
				"modelRoute": map[string]any{"primary": "gpt"},
				"tools":      []any{map[string]any{"name": "a.b"}},
				"requires":   map[string]any{"toolUse": true},
			},
		},
		{
			name:      "agent without tools keeps explicit version and image",
			in:        obj(KindAgent, "bot", map[string]any{"framework": map[string]any{"adapter": "crewai", "version": "1.2", "image": "my/img:1"}, "modelRoute": map[string]any{"primary": "gpt"}}),
			namespace: "default",
			want: map[string]any{
				"framework":  map[string]any{"adapter": "crewai", "version": "1.2", "image": "my/img:1"},
				"modelRoute": map[string]any{"primary": "gpt"},
			},
		},
		{
			name:      "financial rest tool",
			in:        obj(KindTool, "bank.pay", map[string]any{"source": "rest", "sideEffect": "financial", "rest": map[string]any{"url": "https://x"}}),
			namespace: "default",
			want: map[string]any{
				"source": "rest", "sideEffect": "financial", "requiresApproval": true,
				"inputSchema":   map[string]any{"type": "object"},
				"rest":          map[string]any{"url": "https://x", "method": "POST", "timeout": "30s", "maxResponseBytes": int64(1048576)},
				"safety":        map[string]any{"scanInjection": "flag"},
				"observability": map[string]any{"traceSensitivity": "high", "recordOutput": true},
			},
		},
		{
			name:      "read-only os tool keeps explicit approval",
			in:        obj(KindTool, "fs.read", map[string]any{"source": "os", "sideEffect": "read_only", "requiresApproval": true, "os": map[string]any{"command": []any{"cat"}}}),
			namespace: "default",
			want: map[string]any{
				"source": "os", "sideEffect": "read_only", "requiresApproval": true,
				"inputSchema":   map[string]any{"type": "object"},
				"os":            map[string]any{"command": []any{"cat"}, "timeout": "10s"},
				"safety":        map[string]any{"scanInjection": "flag"},
				"observability": map[string]any{"traceSensitivity": "low", "recordOutput": true},
			},
		},
		{
			name:      "mcp server",
			in:        obj(KindMCPServer, "gh", map[string]any{"url": "https://mcp"}),
			namespace: "default",
			want:      map[string]any{"url": "https://mcp", "transport": "http", "trustScore": 0.5},
		},
		{
			name:      "policy",
			in:        obj(KindPolicy, "p", map[string]any{"rules": []any{map[string]any{"name": "r", "when": "true", "action": "deny"}}, "limits": []any{map[string]any{"scope": "tool", "match": "*", "window": "1h", "maxCalls": int64(5)}}}),
			namespace: "default",
			want: map[string]any{
				"rules":       []any{map[string]any{"name": "r", "when": "true", "action": "deny", "hooks": []any{"toolCallRequest"}}},
				"limits":      []any{map[string]any{"scope": "tool", "match": "*", "window": "1h", "maxCalls": int64(5), "mode": "hard"}},
				"idempotency": map[string]any{"window": "10m"},
				"approval":    map[string]any{"timeout": "24h"},
			},
		},
		{
			name:      "deployment",
			in:        obj(KindDeployment, "d", map[string]any{"agentRef": map[string]any{"name": "bot"}, "environment": "dev"}),
			namespace: "default",
			want:      map[string]any{"agentRef": map[string]any{"name": "bot"}, "environment": "dev", "runtime": "local", "replicas": int64(1)},
		},
		{
			name:      "deployment keeps zero replicas",
			in:        obj(KindDeployment, "d", map[string]any{"agentRef": map[string]any{"name": "bot"}, "environment": "dev", "replicas": int64(0)}),
			namespace: "default",
			want:      map[string]any{"agentRef": map[string]any{"name": "bot"}, "environment": "dev", "runtime": "local", "replicas": int64(0)},
		},
		{name: "environment prod", in: obj(KindEnvironment, "prod", nil), namespace: "default", want: map[string]any{"tier": "prod"}},
		{name: "environment other", in: obj(KindEnvironment, "qa", nil), namespace: "default", want: map[string]any{"tier": "dev"}},
		{name: "memory", in: obj(KindMemory, "m", nil), namespace: "default", want: map[string]any{"type": "working", "maxItems": int64(1000)}},
		{name: "ragindex", in: obj(KindRAGIndex, "r", nil), namespace: "default", want: map[string]any{"chunking": map[string]any{"size": int64(800), "overlap": int64(100)}, "topK": int64(5)}},
		{name: "secret", in: obj(KindSecret, "s", map[string]any{"data": map[string]any{"k": "v"}}), namespace: "default", want: map[string]any{"type": "opaque", "data": map[string]any{"k": "v"}}},
		{name: "tenant has no namespace", in: obj(KindTenant, "acme", nil), namespace: "", want: nil},
		{name: "model has no spec defaults", in: obj(KindModel, "gpt", map[string]any{"provider": "openai", "model": "gpt-4o"}), namespace: "default", want: map[string]any{"provider": "openai", "model": "gpt-4o"}},
		{name: "unknown kind untouched", in: &Object{Kind: "Nope", Metadata: ObjectMeta{Name: "x"}}, namespace: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.in.DeepCopy()
			Default(o)
			require.Equal(t, tt.namespace, o.Metadata.Namespace)
			require.Equal(t, tt.want, o.Spec)
			again := o.DeepCopy()
			Default(again)
			require.Equal(t, o, again, "Default must be idempotent")
		})
	}
}

func TestDefaultKeepsNamespace(t *testing.T) {
	t.Parallel()
	o := obj(KindModel, "gpt", map[string]any{"provider": "openai", "model": "gpt-4o"})
	o.Metadata.Namespace = "team-a"
	Default(o)
	require.Equal(t, "team-a", o.Metadata.Namespace)
}

func TestDefaultWrongTypesDoNotPanic(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		o := obj(k.Kind, "x", map[string]any{
			"framework": "s", "tools": "s", "rest": 1, "os": []any{}, "safety": true, "observability": "x",
			"rules": []any{1, "s"}, "limits": map[string]any{}, "idempotency": 3, "approval": nil, "chunking": "c",
			"sideEffect": 7, "source": "rest",
		})
		require.NotPanics(t, func() { Default(o); Validate(o) }, k.Kind)
	}
	require.NotPanics(t, func() { Default(nil) })
}

func TestSideEffectClasses(t *testing.T) {
	t.Parallel()
	want := map[string]bool{
		SideEffectReadOnly: false, SideEffectLocalWrite: false, SideEffectExternalWrite: false,
		SideEffectFinancial: true, SideEffectCommunication: true, SideEffectCodeExecution: false,
		SideEffectPrivileged: true,
	}
	require.Len(t, SideEffectClasses(), len(want))
	for _, c := range SideEffectClasses() {
		require.Equal(t, want[c], DefaultRequiresApproval(c), c)
	}
	require.False(t, DefaultRequiresApproval("unknown"))
	require.Equal(t, "openai:gpt-4o", ModelRouteID("openai", "gpt-4o"))
}
