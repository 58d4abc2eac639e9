package resource

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// validObjects returns one valid, defaulted object per kind.
func validObjects() []*Object {
	objs := []*Object{
		obj(KindAgent, "support-bot", map[string]any{
			"framework":  map[string]any{"adapter": "langgraph"},
			"modelRoute": map[string]any{"primary": "gpt", "fallback": []any{"claude"}},
			"tools":      []any{map[string]any{"name": "zendesk.search_tickets"}, map[string]any{"name": "bank.pay", "requiresApproval": false}},
			"mcpServers": []any{map[string]any{"name": "github"}},
			"memory":     map[string]any{"working": "scratch"},
			"policies":   []any{"baseline"},
			"requires":   map[string]any{"streaming": true, "minContextWindow": int64(8000)},
		}),
		obj(KindModel, "gpt", map[string]any{"provider": "openai", "model": "gpt-4o", "endpoint": "https://api.openai.com/v1",
			"apiKeySecretRef": map[string]any{"name": "openai", "key": "apiKey"},
			"capabilities":    map[string]any{"toolUse": true, "contextWindow": int64(128000)},
			"cost":            map[string]any{"inputPerMillion": 2.5, "outputPerMillion": int64(10)}}),
		obj(KindTool, "zendesk.search_tickets", map[string]any{"source": "rest", "sideEffect": "read_only",
			"rest":        map[string]any{"url": "https://zendesk.example/api", "headers": map[string]any{"Accept": "application/json"}, "headerSecrets": map[string]any{"Authorization": map[string]any{"name": "zd", "key": "token"}}},
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}},
			"costPerCall": 0.01}),
		obj(KindTool, "github.create_issue", map[string]any{"source": "mcp", "sideEffect": "external_write", "mcp": map[string]any{"server": "github", "tool": "create_issue"}}),
		obj(KindTool, "shell.run", map[string]any{"source": "os", "sideEffect": "code_execution", "os": map[string]any{"command": []any{"/bin/sh", "-c"}, "allowRead": []any{"/tmp"}}}),
		obj(KindTool, "crm.lookup", map[string]any{"source": "function", "sideEffect": "read_only"}),
		obj(KindMCPServer, "github", map[string]any{"url": "https://mcp.github.example/mcp", "pinnedVersion": "1.2.0"}),
		obj(KindMCPServer, "local-fs", map[string]any{"transport": "stdio", "command": []any{"mcp-fs"}}),
		obj(KindMCPServer, "github-stdio", map[string]any{"transport": "stdio", "command": []any{"npx", "server-github"}, "args": []any{"--read-only"},
			"env": []any{
				map[string]any{"name": "LOG_LEVEL", "value": "info"},
				map[string]any{"name": "GITHUB_TOKEN", "secretKeyRef": map[string]any{"name": "github", "key": "token"}},
			},
			"sandbox": map[string]any{"cpuSeconds": int64(60), "memoryMB": int64(512), "allowRead": []any{"/opt/mcp"}, "allowWrite": []any{"/var/lib/mcp"}, "allowHosts": []any{"api.github.com"}}}),
		obj(KindPolicy, "baseline", map[string]any{"rules": []any{
			map[string]any{"name": "no-prod-delete", "when": "tool.name == 'db.drop'", "action": "deny", "message": "no"},
			map[string]any{"name": "mask", "hooks": []any{"toolCallRequest", "preflight"}, "when": "true", "action": "modify", "modify": map[string]any{"set": map[string]any{"input.x": "'y'"}}},
		}, "limits": []any{map[string]any{"scope": "agent", "match": "*", "window": "1h", "maxCost": 5.5}},
			"selector": map[string]any{"environments": []any{"prod"}}}),
		obj(KindDeployment, "bot-dev", map[string]any{"agentRef": map[string]any{"name": "support-bot"}, "environment": "dev"}),
		obj(KindEnvironment, "staging", map[string]any{"promotesTo": "prod"}),
		obj(KindExecution, "run-1", map[string]any{"agentRef": map[string]any{"name": "support-bot"}, "input": map[string]any{"q": "hi"}}),
		obj(KindToolCall, "call-1", map[string]any{"executionRef": map[string]any{"name": "run-1"}, "agentRef": map[string]any{"name": "support-bot"},
			"toolRef": map[string]any{"name": "bank.pay"}, "input": map[string]any{"amount": int64(5)},
			"sideEffects": map[string]any{"level": "financial", "idempotencyKey": "abc"},
			"approval":    map[string]any{"required": true, "status": "approved", "approvedBy": "a@example.com"}}),
		obj(KindApproval, "call-1", map[string]any{"toolCallRef": map[string]any{"name": "call-1"}, "agentRef": map[string]any{"name": "support-bot"}, "toolRef": map[string]any{"name": "bank.pay"}, "sideEffect": "financial"}),
		obj(KindConversation, "c1", map[string]any{"agentRef": map[string]any{"name": "support-bot"}, "retention": "720h"}),
		obj(KindCompiledAgentManifest, "support-bot-g3", map[string]any{
			"agent":      map[string]any{"name": "support-bot", "generation": int64(3)},
			"framework":  map[string]any{"adapter": "langgraph", "adapterImage": "ghcr.io/warden-dev/adapter-langgraph:latest"},
			"modelRoute": map[string]any{"primary": "openai:gpt-4o", "fallback": []any{"anthropic:claude"}},
			"tools":      []any{map[string]any{"name": "bank.pay", "gatewayUrl": "http://127.0.0.1:8081", "sideEffect": "financial", "requiresApproval": true}},
			"mcpServers": []any{map[string]any{"name": "github", "gatewayUrl": "http://127.0.0.1:8082", "pinnedVersion": "", "trustScore": 0.5}},
			"memories":   map[string]any{"working": map[string]any{"endpoint": "http://127.0.0.1:8084", "namespace": "default", "name": "scratch"}},
			"policies":   map[string]any{"resolved": []any{"baseline@1"}},
		}),
		obj(KindMemory, "scratch", map[string]any{"ttl": "24h"}),
		obj(KindRAGIndex, "docs", map[string]any{"sources": []any{"handbook"}, "embedding": map[string]any{"modelRef": "embed"}}),
		obj(KindKnowledgeSource, "handbook", map[string]any{"type": "inline", "content": "hello"}),
		obj(KindRoleBinding, "ops", map[string]any{"role": "approver", "subjects": []any{map[string]any{"kind": "User", "name": "a@example.com"}}}),
		obj(KindSecret, "openai", map[string]any{"data": map[string]any{"apiKey": "sk-1"}}),
		obj(KindTenant, "acme", map[string]any{"displayName": "Acme", "owner": "o@acme.example"}),
		obj(KindNamespace, "team-a", nil),
		obj(KindNotificationChannel, "ops-mail", map[string]any{"type": "email", "maxAttempts": int64(5),
			"selector": map[string]any{"environments": []any{"prod"}, "sideEffects": []any{"financial"}},
			"email": map[string]any{"to": []any{"ops@example.com"}, "from": "warden@example.com",
				"smtp": map[string]any{"host": "smtp.example.com", "port": int64(587), "username": "warden",
					"passwordSecretRef": map[string]any{"name": "smtp", "key": "password"}}}}),
		obj(KindNotificationChannel, "ops-hook", map[string]any{"type": "webhook",
			"webhook": map[string]any{"url": "https://hooks.example.com/warden", "signingSecretRef": map[string]any{"name": "hook", "key": "secret"}}}),
		obj(KindNotificationChannel, "ops-chat", map[string]any{"type": "slack",
			"slack": map[string]any{"webhookURLSecretRef": map[string]any{"name": "slack", "key": "url"}, "signingSecretRef": map[string]any{"name": "slack", "key": "signing"},
				"botTokenSecretRef": map[string]any{"name": "slack", "key": "bot"}, "apiURL": "https://slack.example.com/api"}}),
		obj(KindConversation, "c2", map[string]any{"agentRef": map[string]any{"name": "support-bot"}}),
	}
	objs[0].Metadata.Labels = map[string]string{"app.kubernetes.io/name": "bot", "tier": ""}
	objs[0].Metadata.Annotations = map[string]string{"warden.dev/owner": "anything goes here"}
	for _, o := range objs {
		Default(o)
	}
	return objs
}

func TestValidateAcceptsValidObjects(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, o := range validObjects() {
		seen[o.Kind] = true
		t.Run(o.Kind+"/"+o.Metadata.Name, func(t *testing.T) {
			t.Parallel()
			require.Empty(t, Validate(o))
		})
	}
	for _, k := range Kinds() {
		require.True(t, seen[k.Kind], "no valid example of %s", k.Kind)
	}
}

// TestTypedSpecsMatchSchemas decodes every valid object into its typed
// spec and back: nothing may be lost, so the json tags and the schemas
// agree.
func TestTypedSpecsMatchSchemas(t *testing.T) {
	t.Parallel()
	roundTrip := map[string]func(*Object) (map[string]any, error){
		KindAgent:                 rt[AgentSpec],
		KindModel:                 rt[ModelSpec],
		KindTool:                  rt[ToolSpec],
		KindMCPServer:             rt[MCPServerSpec],
		KindPolicy:                rt[PolicySpec],
		KindDeployment:            rt[DeploymentSpec],
		KindEnvironment:           rt[EnvironmentSpec],
		KindExecution:             rt[ExecutionSpec],
		KindToolCall:              rt[ToolCallSpec],
		KindApproval:              rt[ApprovalSpec],
		KindConversation:          rt[ConversationSpec],
		KindCompiledAgentManifest: rt[CompiledAgentManifestSpec],
		KindMemory:                rt[MemorySpec],
		KindRAGIndex:              rt[RAGIndexSpec],
		KindKnowledgeSource:       rt[KnowledgeSourceSpec],
		KindRoleBinding:           rt[RoleBindingSpec],
		KindSecret:                rt[SecretSpec],
		KindTenant:                rt[TenantSpec],
		KindNamespace:             rt[NamespaceSpec],
		KindNotificationChannel:   rt[NotificationChannelSpec],
	}
	for _, o := range validObjects() {
		f, ok := roundTrip[o.Kind]
		require.True(t, ok, o.Kind)
		got, err := f(o)
		require.NoError(t, err)
		back := o.DeepCopy()
		back.Spec = got
		require.Empty(t, Diff(o, back), "%s/%s", o.Kind, o.Metadata.Name)
	}
}

func rt[T any](o *Object) (map[string]any, error) {
	v, err := DecodeSpec[T](o)
	if err != nil {
		return nil, err
	}
	m, err := ToMap(v)
	if len(m) == 0 {
		m = nil
	}
	return m, err
}

type wantErr struct{ path, code string }

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *Object
		edit func(o *Object)
		want []wantErr
	}{
		{
			name: "envelope",
			in:   obj(KindModel, "", map[string]any{"provider": "openai", "model": "gpt-4o"}),
			edit: func(o *Object) {
				o.APIVersion = "warden.dev/v1"
				o.Metadata.Namespace = "Team_A"
				o.Metadata.Labels = map[string]string{"bad key!": "v", "ok": "-bad-", "long": string(make([]byte, 64))}
				o.Metadata.Annotations = map[string]string{"/x": "v"}
			},
			want: []wantErr{
				{"apiVersion", ErrCodeInvalid},
				{"metadata.annotations[/x]", ErrCodeInvalid},
				{"metadata.labels.long", ErrCodeTooLong},
				{"metadata.labels.ok", ErrCodeInvalid},
				{"metadata.labels[bad key!]", ErrCodeInvalid},
				{"metadata.name", ErrCodeRequired},
				{"metadata.namespace", ErrCodeInvalid},
			},
		},
		{
			name: "unknown kind and missing apiVersion",
			in:   &Object{Kind: "Agnet", Metadata: ObjectMeta{Name: "x"}},
			want: []wantErr{{"apiVersion", ErrCodeRequired}, {"kind", ErrCodeNotSupported}},
		},
		{
			name: "missing kind",
			in:   &Object{APIVersion: GroupVersion, Metadata: ObjectMeta{Name: "x"}},
			want: []wantErr{{"kind", ErrCodeRequired}},
		},
		{
			name: "agent",
			in: obj(KindAgent, "Support_Bot", map[string]any{
				"framework":  map[string]any{"adapter": "Lang Graph"},
				"modelRoute": map[string]any{"fallback": []any{"ok", "Not_OK"}},
				"tools":      []any{map[string]any{"name": "zendesk.search"}, map[string]any{"name": "nodot"}, map[string]any{"name": "zendesk.search"}, map[string]any{}},
				"mcpServers": []any{map[string]any{"name": "gh"}, map[string]any{"name": "gh"}},
				"policies":   []any{"UPPER"},
				"toolz":      []any{},
				"requires":   map[string]any{"minContextWindow": -1},
			}),
			want: []wantErr{
				{"metadata.name", ErrCodeInvalid},
				{"spec.framework.adapter", ErrCodeInvalid},
				{"spec.mcpServers[1].name", ErrCodeDuplicate},
				{"spec.modelRoute.fallback[1]", ErrCodeInvalid},
				{"spec.modelRoute.primary", ErrCodeRequired},
				{"spec.policies[0]", ErrCodeInvalid},
				{"spec.requires.minContextWindow", ErrCodeInvalid},
				{"spec.tools[1].name", ErrCodeInvalid},
				{"spec.tools[2].name", ErrCodeDuplicate},
				{"spec.tools[3].name", ErrCodeRequired},
				{"spec.toolz", ErrCodeNotSupported},
			},
		},
		{
			name: "tool rest",
			in: obj(KindTool, "zendesk", map[string]any{"source": "rest", "sideEffect": "dangerous",
				"rest": map[string]any{"timeout": "soon", "method": "FETCH"}, "mcp": map[string]any{"server": "x", "tool": "y"},
				"inputSchema": map[string]any{"type": "banana"}, "costPerCall": "free"}),
			want: []wantErr{
				{"metadata.name", ErrCodeInvalid},
				{"spec.costPerCall", ErrCodeInvalid},
				{"spec.inputSchema", ErrCodeInvalid},
				{"spec.mcp", ErrCodeInvalid},
				{"spec.rest.method", ErrCodeNotSupported},
				{"spec.rest.timeout", ErrCodeInvalid},
				{"spec.rest.url", ErrCodeRequired},
				{"spec.sideEffect", ErrCodeNotSupported},
			},
		},
		{
			name: "tool mcp and os",
			in:   obj(KindTool, "a.b", map[string]any{"source": "mcp", "sideEffect": "read_only", "mcp": map[string]any{}}),
			want: []wantErr{{"spec.mcp.server", ErrCodeRequired}, {"spec.mcp.tool", ErrCodeRequired}},
		},
		{
			name: "tool os",
			in:   obj(KindTool, "a.b", map[string]any{"source": "os", "sideEffect": "read_only", "os": map[string]any{"timeout": "-1s"}}),
			want: []wantErr{{"spec.os.command", ErrCodeRequired}, {"spec.os.timeout", ErrCodeInvalid}},
		},
		{
			name: "tool without spec",
			in:   obj(KindTool, "a.b", nil),
			want: []wantErr{{"spec.sideEffect", ErrCodeRequired}, {"spec.source", ErrCodeRequired}},
		},
		{
			name: "mcp server",
			in:   obj(KindMCPServer, "gh", map[string]any{"trustScore": 1.5, "command": []any{"x"}}),
			want: []wantErr{{"spec.command", ErrCodeInvalid}, {"spec.trustScore", ErrCodeInvalid}, {"spec.url", ErrCodeRequired}},
		},
		{
			name: "mcp server stdio",
			in:   obj(KindMCPServer, "gh", map[string]any{"transport": "stdio"}),
			want: []wantErr{{"spec.command", ErrCodeRequired}},
		},
		{
			name: "mcp server http with the fields of stdio",
			in: obj(KindMCPServer, "gh", map[string]any{"url": "https://mcp.example.com/mcp", "args": []any{"-v"},
				"env": []any{map[string]any{"name": "A", "value": "b"}}, "sandbox": map[string]any{}}),
			want: []wantErr{{"spec.args", ErrCodeInvalid}, {"spec.env", ErrCodeInvalid}, {"spec.sandbox", ErrCodeInvalid}},
		},
		{
			name: "mcp server stdio env and sandbox",
			in: obj(KindMCPServer, "gh", map[string]any{"transport": "stdio", "command": []any{"srv"},
				"env": []any{
					map[string]any{"name": "1X", "value": "a"},
					map[string]any{"name": "TOKEN", "value": "a", "secretKeyRef": map[string]any{"name": "gh", "key": "token"}},
					map[string]any{"name": "TOKEN", "secretKeyRef": map[string]any{"name": "Not_A_Name", "key": "to ken"}},
					map[string]any{"value": "a"},
					map[string]any{"name": "B", "secretKeyRef": map[string]any{"name": "gh"}},
				},
				"sandbox": map[string]any{"allowRead": []any{"relative/dir"}, "allowWrite": []any{"/ok", "tmp"}, "memoryMB": int64(-1)}}),
			want: []wantErr{
				{"spec.env[0].name", ErrCodeInvalid},
				{"spec.env[1]", ErrCodeInvalid},
				{"spec.env[2].name", ErrCodeDuplicate},
				{"spec.env[2].secretKeyRef.key", ErrCodeInvalid},
				{"spec.env[2].secretKeyRef.name", ErrCodeInvalid},
				{"spec.env[3].name", ErrCodeRequired},
				{"spec.env[4].secretKeyRef.key", ErrCodeRequired},
				{"spec.sandbox.allowRead[0]", ErrCodeInvalid},
				{"spec.sandbox.allowWrite[1]", ErrCodeInvalid},
				{"spec.sandbox.memoryMB", ErrCodeInvalid},
			},
		},
		{
			name: "policy",
			in: obj(KindPolicy, "p", map[string]any{
				"rules": []any{
					map[string]any{"name": "r1", "when": "true", "action": "deny"},
					map[string]any{"name": "r1", "when": "  ", "action": "modify"},
					map[string]any{"name": "R2", "when": "true", "action": "allow", "hooks": []any{"onCall"}, "modify": map[string]any{}},
					map[string]any{"action": "deny"},
				},
				"idempotency": map[string]any{"window": "forever"},
				"approval":    map[string]any{"timeout": "0s"},
				"limits":      []any{map[string]any{"scope": "tool", "match": "*", "window": "1d"}},
			}),
			want: []wantErr{
				{"spec.approval.timeout", ErrCodeInvalid},
				{"spec.idempotency.window", ErrCodeInvalid},
				{"spec.limits[0].maxCalls", ErrCodeRequired},
				{"spec.limits[0].window", ErrCodeInvalid},
				{"spec.rules[1].modify", ErrCodeRequired},
				{"spec.rules[1].name", ErrCodeDuplicate},
				{"spec.rules[1].when", ErrCodeRequired},
				{"spec.rules[2].hooks[0]", ErrCodeNotSupported},
				{"spec.rules[2].modify", ErrCodeInvalid},
				{"spec.rules[2].name", ErrCodeInvalid},
				{"spec.rules[3].name", ErrCodeRequired},
				{"spec.rules[3].when", ErrCodeRequired},
			},
		},
		{
			name: "policy without rules",
			in:   obj(KindPolicy, "p", map[string]any{"rules": []any{}}),
			want: []wantErr{{"spec.rules", ErrCodeRequired}},
		},
		{
			name: "deployment",
			in:   obj(KindDeployment, "d", map[string]any{"agentRef": map[string]any{}, "replicas": int64(101), "environment": "Prod"}),
			want: []wantErr{{"spec.agentRef.name", ErrCodeRequired}, {"spec.environment", ErrCodeInvalid}, {"spec.replicas", ErrCodeInvalid}},
		},
		{
			name: "environment",
			in:   obj(KindEnvironment, "qa", map[string]any{"tier": "test"}),
			want: []wantErr{{"spec.tier", ErrCodeNotSupported}},
		},
		{
			name: "tenant with namespace",
			in:   obj(KindTenant, "acme", map[string]any{"owner": 3}),
			edit: func(o *Object) { o.Metadata.Namespace = "default" },
			want: []wantErr{{"metadata.namespace", ErrCodeForbidden}, {"spec.owner", ErrCodeInvalid}},
		},
		{
			name: "manifest name",
			in: obj(KindCompiledAgentManifest, "bot-g2", map[string]any{
				"agent":      map[string]any{"name": "bot", "generation": int64(3)},
				"framework":  map[string]any{"adapter": "x", "adapterImage": "y:1"},
				"modelRoute": map[string]any{"primary": "gpt"},
			}),
			edit: func(o *Object) { o.APIVersion = GroupVersion },
			want: []wantErr{{"apiVersion", ErrCodeInvalid}, {"metadata.name", ErrCodeInvalid}, {"spec.modelRoute.primary", ErrCodeInvalid}},
		},
		{
			name: "manifest name shape",
			in:   obj(KindCompiledAgentManifest, "bot", nil),
			want: []wantErr{{"metadata.name", ErrCodeInvalid}, {"spec", ErrCodeRequired}},
		},
		{
			name: "toolcall",
			in: obj(KindToolCall, "c", map[string]any{"agentRef": map[string]any{"name": "a"}, "toolRef": map[string]any{"name": "nodot"},
				"sideEffects": map[string]any{"level": "financial"}, "approval": map[string]any{"status": "maybe"}}),
			edit: func(o *Object) { o.Status = map[string]any{"phase": "Done"} },
			want: []wantErr{{"spec.approval.status", ErrCodeNotSupported}, {"spec.toolRef.name", ErrCodeInvalid}, {"status.phase", ErrCodeNotSupported}},
		},
		{
			name: "rag index",
			in:   obj(KindRAGIndex, "r", map[string]any{"chunking": map[string]any{"size": int64(100), "overlap": int64(100)}, "topK": int64(0)}),
			want: []wantErr{{"spec.chunking.overlap", ErrCodeInvalid}, {"spec.topK", ErrCodeInvalid}},
		},
		{
			name: "knowledge source",
			in:   obj(KindKnowledgeSource, "k", map[string]any{"type": "git"}),
			want: []wantErr{{"spec.url", ErrCodeRequired}},
		},
		{
			name: "role binding",
			in:   obj(KindRoleBinding, "rb", map[string]any{"role": "root", "subjects": []any{map[string]any{"kind": "Robot", "name": "x"}}}),
			want: []wantErr{{"spec.role", ErrCodeNotSupported}, {"spec.subjects[0].kind", ErrCodeNotSupported}},
		},
		{
			name: "secret",
			in:   obj(KindSecret, "s", map[string]any{"data": map[string]any{"bad key": "v", "n": int64(1)}}),
			want: []wantErr{{"spec.data.n", ErrCodeInvalid}, {"spec.data[bad key]", ErrCodeInvalid}},
		},
		{
			name: "memory and conversation durations",
			in:   obj(KindMemory, "m", map[string]any{"ttl": "1y", "type": "forever", "endpoint": "nope"}),
			want: []wantErr{{"spec.endpoint", ErrCodeInvalid}, {"spec.ttl", ErrCodeInvalid}, {"spec.type", ErrCodeNotSupported}},
		},
		{
			name: "tenant retention durations",
			in: func() *Object {
				o := obj(KindTenant, "acme", map[string]any{"retention": map[string]any{"toolCalls": "30d", "events": "-1h", "audit": "8760h"}})
				o.Metadata.Namespace = ""
				return o
			}(),
			want: []wantErr{{"spec.retention.events", ErrCodeInvalid}, {"spec.retention.toolCalls", ErrCodeInvalid}},
		},
		{
			name: "long name",
			in:   obj(KindModel, "a123456789012345678901234567890123456789012345678901234567890123", map[string]any{"provider": "openai", "model": "x"}),
			want: []wantErr{{"metadata.name", ErrCodeTooLong}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.in.DeepCopy()
			if tt.edit != nil {
				tt.edit(o)
			}
			Default(o)
			errs := Validate(o)
			got := make([]wantErr, len(errs))
			for i, e := range errs {
				got[i] = wantErr{e.Path, e.Code}
				require.NotEmpty(t, e.Message, e.Path)
			}
			require.Equal(t, tt.want, got, "all errors: %v", errs)
		})
	}
}

func TestValidateSuggestsFields(t *testing.T) {
	t.Parallel()
	o := obj(KindAgent, "bot", map[string]any{
		"framework":  map[string]any{"adapter": "langgraph", "verison": "1"},
		"modelRoute": map[string]any{"primary": "gpt"},
		"tools":      []any{map[string]any{"name": "a.b", "requireApproval": true}},
		"zzz":        1,
	})
	Default(o)
	errs := Validate(o)
	msgs := map[string]string{}
	for _, e := range errs {
		msgs[e.Path] = e.Message
	}
	require.Contains(t, msgs["spec.framework.verison"], `did you mean "version"?`)
	require.Contains(t, msgs["spec.tools[0].requireApproval"], `did you mean "requiresApproval"?`)
	require.Contains(t, msgs["spec.zzz"], "allowed fields: description, framework,")
}

func TestValidateNil(t *testing.T) {
	t.Parallel()
	require.Len(t, Validate(nil), 1)
}

func TestNames(t *testing.T) {
	t.Parallel()
	require.True(t, IsToolName("zendesk.search_tickets"))
	require.False(t, IsToolName("zendesk.search.tickets"))
	require.False(t, IsToolName("_a.b"))
	require.True(t, IsDNS1123Label("a-1"))
	require.False(t, IsDNS1123Label("a-"))
	require.Equal(t, "bot-g3", ManifestName("bot", 3))
	a, g, ok := ParseManifestName("my-bot-g12")
	require.True(t, ok)
	require.Equal(t, "my-bot", a)
	require.EqualValues(t, 12, g)
	_, _, ok = ParseManifestName("bot-g0")
	require.False(t, ok)
}
