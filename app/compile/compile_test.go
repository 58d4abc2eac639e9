package compile

import (
	"bytes"
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const fleetDir = "../../examples/fleet"

// loadFleet decodes the YAML files of dir as `warden apply -f dir` would
// send them, defaults them and stamps them as a store would.
func loadFleet(t testing.TB, paths ...string) []*resource.Object {
	t.Helper()
	if len(paths) == 0 {
		files, err := filepath.Glob(filepath.Join(fleetDir, "*.yaml"))
		require.NoError(t, err)
		paths = files
	}
	var out []*resource.Object
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		objs, err := resource.DecodeDocuments(body)
		require.NoError(t, err, p)
		for _, o := range objs {
			resource.Default(o)
			require.Empty(t, resource.Validate(o), "%s %s", p, o.Key())
			o.Metadata.Generation = 1
			o.Metadata.UID = "uid-" + o.Kind + "-" + o.Metadata.Name
			out = append(out, o)
		}
	}
	for i, o := range out {
		o.Metadata.ResourceVersion = strconv.Itoa(100 + i)
	}
	return out
}

func find(objs []*resource.Object, kind, name string) *resource.Object {
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	return nil
}

func newCompiler() *Compiler {
	return New(Options{}.WithDefaults(), policy.NewEngine())
}

func TestCompileFleetGolden(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	m, errs, err := newCompiler().Compile(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"))
	require.NoError(t, err)
	require.Empty(t, errs)
	got, err := Canonical(m)
	require.NoError(t, err)

	golden := filepath.Join("testdata", "support-bot.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./app/compile -run Golden -update to create it")
	require.Equal(t, string(bytes.TrimSuffix(want, []byte("\n"))), string(got))
}

// TestCompileFollowsConfiguredAddresses compiles with every service on a
// non-default port and the control plane behind a public URL: every
// endpoint of the manifest follows its service's address, none is a
// default one.
func TestCompileFollowsConfiguredAddresses(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	o := Options{
		ControlURL:     "https://warden.example.com",
		ToolGatewayURL: "http://127.0.0.1:28081",
		MCPGatewayURL:  "http://127.0.0.1:28082",
		ModelRouterURL: "http://127.0.0.1:28083",
		MemoryURL:      "http://127.0.0.1:28084",
		RAGURL:         "http://127.0.0.1:28085",
		TraceURL:       "http://127.0.0.1:28086",
	}.WithDefaults()
	require.NoError(t, o.Validate())
	m, errs, err := New(o, policy.NewEngine()).Compile(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"))
	require.NoError(t, err)
	require.Empty(t, errs)
	got, err := Canonical(m)
	require.NoError(t, err)

	golden := filepath.Join("testdata", "support-bot-ports.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./app/compile -run Addresses -update to create it")
	require.Equal(t, string(bytes.TrimSuffix(want, []byte("\n"))), string(got))

	for _, def := range []string{":8080", ":8081", ":8082", ":8083", ":8084", ":8085", ":8086"} {
		require.NotContains(t, string(got), "127.0.0.1"+def)
	}
	spec, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
	require.NoError(t, err)
	require.Equal(t, "https://warden.example.com/v1/agbom/support-bot", spec.Observability.AbomEndpoint)
	require.Equal(t, "http://127.0.0.1:28086", spec.Observability.TraceEndpoint)
}

func TestCompileFields(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	m, errs, err := newCompiler().Compile(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"))
	require.NoError(t, err)
	require.Empty(t, errs)

	require.Equal(t, "internal.warden.dev/v1", m.APIVersion)
	require.Equal(t, "CompiledAgentManifest", m.Kind)
	require.Equal(t, "support-bot-g1", m.Metadata.Name)
	require.Equal(t, "default", m.Metadata.Namespace)
	require.Equal(t, map[string]string{"warden.dev/agent": "support-bot"}, m.Metadata.Labels)

	spec, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
	require.NoError(t, err)
	require.Equal(t, resource.ManifestAgent{Name: "support-bot", Generation: 1}, spec.Agent)
	require.Equal(t, resource.ManifestFramework{Adapter: "openai-agents", AdapterImage: "ghcr.io/warden-dev/adapter-openai-agents:0.4.2"}, spec.Framework)
	require.Equal(t, resource.ManifestModelRoute{Primary: "openai:gpt-4o", Fallback: []string{"anthropic:claude-sonnet"}}, spec.ModelRoute)

	schemaSha := func(tool string) string {
		ts, err := resource.DecodeSpec[resource.ToolSpec](find(objs, resource.KindTool, tool))
		require.NoError(t, err)
		sha, err := jcs.SHA256(ts.InputSchema)
		require.NoError(t, err)
		return sha
	}
	gw := "http://127.0.0.1:8081"
	want := []resource.ManifestTool{
		{Name: "zendesk.search_tickets", GatewayURL: gw, SideEffect: "read_only", SchemaSha: schemaSha("zendesk.search_tickets")},
		{Name: "zendesk.reply", GatewayURL: gw, SideEffect: "communication", SchemaSha: schemaSha("zendesk.reply"), RequiresApproval: true},
		{Name: "stripe.refund", GatewayURL: gw, SideEffect: "financial", SchemaSha: schemaSha("stripe.refund"), RequiresApproval: true},
		// external_write needs no approval by class; the agent asks for it.
		{Name: "github.create_issue", GatewayURL: gw, SideEffect: "external_write", SchemaSha: schemaSha("github.create_issue"), RequiresApproval: true},
		{Name: "workspace.write_file", GatewayURL: gw, SideEffect: "local_write", SchemaSha: schemaSha("workspace.write_file")},
		{Name: "shell.exec", GatewayURL: gw, SideEffect: "code_execution", SchemaSha: schemaSha("shell.exec")},
		{Name: "k8s.scale_deployment", GatewayURL: gw, SideEffect: "privileged", SchemaSha: schemaSha("k8s.scale_deployment"), RequiresApproval: true},
	}
	require.Equal(t, want, spec.Tools)
	require.Empty(t, spec.MCPServers)
	require.Equal(t, &resource.ManifestMemory{Endpoint: "http://127.0.0.1:8084", Namespace: "default", Name: "support-bot-working"}, spec.Memories.Working)
	require.Equal(t, []resource.ManifestKnowledge{{Endpoint: "http://127.0.0.1:8085", Namespace: "default", Name: "support-kb", Sources: []string{"support-handbook"}}},
		spec.Memories.Knowledge)
	require.Equal(t, []string{"model-guard@1", "pii-output@1", "refund-limits@1"}, spec.Policies.Resolved)
	require.Equal(t, resource.ManifestObservability{TraceEndpoint: "http://127.0.0.1:8086", AbomEndpoint: "http://127.0.0.1:8080/v1/agbom/support-bot"}, spec.Observability)

	// Exactly the fields of SPEC.md: an item without approval has no
	// requiresApproval key at all, and nothing else sneaks in.
	tools := m.Spec["tools"].([]any)
	require.NotContains(t, tools[0].(map[string]any), "requiresApproval")
	keys := func(mp map[string]any) []string {
		var out []string
		for k := range mp {
			out = append(out, k)
		}
		return out
	}
	require.ElementsMatch(t, []string{"agent", "framework", "modelRoute", "tools", "mcpServers", "memories", "policies", "observability"}, keys(m.Spec))
	require.ElementsMatch(t, []string{"name", "gatewayUrl", "sideEffect", "schemaSha", "requiresApproval"}, keys(tools[1].(map[string]any)))
}

func TestCompileOverridesAndMCP(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	agent := find(objs, resource.KindAgent, "support-bot")
	agent.Metadata.Generation = 7
	agent.Spec["tools"] = []any{
		map[string]any{"name": "stripe.refund", "requiresApproval": false},
		map[string]any{"name": "docs.search"},
	}
	agent.Spec["mcpServers"] = []any{map[string]any{"name": "docs"}, map[string]any{"name": "tickets"}}
	objs = append(objs,
		&resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindMCPServer, Metadata: resource.ObjectMeta{Name: "docs", Namespace: "default"},
			Spec: map[string]any{"url": "https://docs.example.com/mcp", "pinnedVersion": "1.4.0", "trustScore": 0.9}},
		&resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindMCPServer, Metadata: resource.ObjectMeta{Name: "tickets", Namespace: "default"},
			Spec: map[string]any{"url": "https://t.example.com/mcp", "gatewayUrl": "https://mcp.example.com/tickets"}},
		&resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindTool, Metadata: resource.ObjectMeta{Name: "docs.search", Namespace: "default"},
			Spec: map[string]any{"source": "mcp", "sideEffect": "read_only", "mcp": map[string]any{"server": "docs", "tool": "search"}, "gatewayUrl": "https://tools.example.com"}},
	)
	m, errs, err := newCompiler().Compile(context.Background(), &fakeReader{objs: objs}, agent)
	require.NoError(t, err)
	require.Empty(t, errs)
	require.Equal(t, "support-bot-g7", m.Metadata.Name)
	spec, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
	require.NoError(t, err)
	require.False(t, spec.Tools[0].RequiresApproval, "the agent's override beats the Tool's class default")
	// A tool without an input schema has no schemaSha; its own gateway wins.
	require.Equal(t, resource.ManifestTool{Name: "docs.search", GatewayURL: "https://tools.example.com", SideEffect: "read_only"}, spec.Tools[1])
	require.Equal(t, []resource.ManifestMCPServer{
		{Name: "docs", GatewayURL: "http://127.0.0.1:8082/v1/mcp/docs", PinnedVersion: "1.4.0", TrustScore: 0.9},
		{Name: "tickets", GatewayURL: "https://mcp.example.com/tickets", PinnedVersion: "", TrustScore: 0.5},
	}, spec.MCPServers)
	require.Contains(t, m.Spec["mcpServers"].([]any)[1].(map[string]any), "pinnedVersion")
}

func TestCompileDeterministic(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	c := newCompiler()
	agent := find(objs, resource.KindAgent, "support-bot")
	first, errs, err := c.Compile(context.Background(), &fakeReader{objs: objs}, agent)
	require.NoError(t, err)
	require.Empty(t, errs)
	want, err := Canonical(first)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		shuffled := make([]*resource.Object, len(objs))
		for j, o := range objs {
			shuffled[j] = o.DeepCopy()
		}
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		// A fresh compiler as well as the warm one: caches must not matter.
		cc := c
		if i%2 == 1 {
			cc = newCompiler()
		}
		m, errs, err := cc.Compile(context.Background(), &fakeReader{objs: shuffled}, agent.DeepCopy())
		require.NoError(t, err)
		require.Empty(t, errs)
		got, err := Canonical(m)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "compilation %d", i)
	}
}

func TestCompileDoesNotMutate(t *testing.T) {
	t.Parallel()
	objs := loadFleet(t)
	before, err := jcs.Marshal(objs)
	require.NoError(t, err)
	_, _, err = newCompiler().Compile(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"))
	require.NoError(t, err)
	_, _, err = newCompiler().Reconcile(context.Background(), &fakeReader{objs: objs}, objs)
	require.NoError(t, err)
	after, err := jcs.Marshal(objs)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

func TestCompileFieldErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(objs []*resource.Object) []*resource.Object
		want   resource.FieldErrors
	}{
		{
			name: "missing primary model",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindAgent, "support-bot").Spec["modelRoute"].(map[string]any)["primary"] = "gpt-5"
				return objs
			},
			want: resource.FieldErrors{{Path: "spec.modelRoute.primary", Code: resource.ErrCodeNotFound, Message: `agent support-bot routes to model "gpt-5", but no Model "gpt-5" exists in namespace default`}},
		},
		{
			name: "missing tool",
			mutate: func(objs []*resource.Object) []*resource.Object {
				return remove(objs, resource.KindTool, "github.create_issue")
			},
			want: resource.FieldErrors{{Path: "spec.tools[3].name", Code: resource.ErrCodeNotFound, Message: `agent support-bot uses tool "github.create_issue", but no Tool "github.create_issue" exists in namespace default`}},
		},
		{
			name: "missing memory and policy",
			mutate: func(objs []*resource.Object) []*resource.Object {
				return remove(remove(objs, resource.KindMemory, "support-bot-working"), resource.KindPolicy, "refund-limits")
			},
			want: resource.FieldErrors{
				{Path: "spec.memory.working", Code: resource.ErrCodeNotFound, Message: `agent support-bot uses working memory "support-bot-working", but no Memory "support-bot-working" exists in namespace default`},
				{Path: "spec.policies[0]", Code: resource.ErrCodeNotFound, Message: `agent support-bot binds policy "refund-limits", but no Policy "refund-limits" exists in namespace default`},
			},
		},
		{
			name: "missing MCP server",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindAgent, "support-bot").Spec["mcpServers"] = []any{map[string]any{"name": "wiki"}}
				return objs
			},
			want: resource.FieldErrors{{Path: "spec.mcpServers[0].name", Code: resource.ErrCodeNotFound, Message: `agent support-bot uses MCP server "wiki", but no MCPServer "wiki" exists in namespace default`}},
		},
		{
			name: "quarantined MCP server",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindAgent, "support-bot").Spec["mcpServers"] = []any{map[string]any{"name": "wiki"}}
				return append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindMCPServer,
					Metadata: resource.ObjectMeta{Name: "wiki", Namespace: "default"}, Spec: map[string]any{"url": "https://w.example.com", "quarantined": true}})
			},
			want: resource.FieldErrors{{Path: "spec.mcpServers[0].name", Code: resource.ErrCodeForbidden, Message: "agent support-bot uses MCP server wiki, which is quarantined"}},
		},
		{
			name: "fallback lacks tool use",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindModel, "claude-sonnet").Spec["capabilities"].(map[string]any)["toolUse"] = false
				return objs
			},
			want: resource.FieldErrors{{Path: "spec.modelRoute.fallback[0]", Code: resource.ErrCodeForbidden, Message: "model anthropic:claude-sonnet (Model claude-sonnet) lacks toolUse, which agent support-bot requires"}},
		},
		{
			name: "second fallback lacks vision and context window",
			mutate: func(objs []*resource.Object) []*resource.Object {
				a := find(objs, resource.KindAgent, "support-bot")
				a.Spec["modelRoute"].(map[string]any)["fallback"] = []any{"claude-sonnet", "small"}
				a.Spec["requires"].(map[string]any)["vision"] = true
				return append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindModel,
					Metadata: resource.ObjectMeta{Name: "small", Namespace: "default"},
					Spec:     map[string]any{"provider": "ollama", "model": "llama3", "capabilities": map[string]any{"toolUse": true, "streaming": true, "contextWindow": 8192}}})
			},
			want: resource.FieldErrors{
				{Path: "spec.modelRoute.fallback[1]", Code: resource.ErrCodeForbidden, Message: "model ollama:llama3 (Model small) lacks vision, which agent support-bot requires"},
				{Path: "spec.modelRoute.fallback[1]", Code: resource.ErrCodeForbidden, Message: "model ollama:llama3 (Model small) lacks a context window of 100000 tokens (it has 8192), which agent support-bot requires"},
			},
		},
		{
			name: "missing RAG index, and an index's missing source and embedding model",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindAgent, "support-bot").Spec["memory"].(map[string]any)["knowledge"] = []any{"wiki", "support-kb", "faq"}
				find(objs, resource.KindRAGIndex, "support-kb").Spec["embedding"] = map[string]any{"modelRef": "embedder"}
				return append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindRAGIndex, Metadata: resource.ObjectMeta{Name: "faq", Namespace: "default"},
					Spec: map[string]any{"sources": []any{"support-handbook", "faq-pages"}}})
			},
			want: resource.FieldErrors{
				{Path: "spec.memory.knowledge[0]", Code: resource.ErrCodeNotFound, Message: `agent support-bot retrieves from RAG index "wiki", but no RAGIndex "wiki" exists in namespace default`},
				{Path: "spec.memory.knowledge[1]", Code: resource.ErrCodeNotFound, Message: `RAG index support-kb embeds with model "embedder", but no Model "embedder" exists in namespace default`},
				{Path: "spec.memory.knowledge[2]", Code: resource.ErrCodeNotFound, Message: `RAG index faq reads knowledge source "faq-pages", but no KnowledgeSource "faq-pages" exists in namespace default`},
			},
		},
		{
			name: "memory of the wrong type",
			mutate: func(objs []*resource.Object) []*resource.Object {
				find(objs, resource.KindMemory, "support-bot-working").Spec["type"] = "semantic"
				return objs
			},
			want: resource.FieldErrors{{Path: "spec.memory.working", Code: resource.ErrCodeInvalid, Message: "agent support-bot uses memory support-bot-working as working memory, but its type is semantic"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := tt.mutate(loadFleet(t))
			m, errs, err := newCompiler().Compile(context.Background(), &fakeReader{objs: objs}, find(objs, resource.KindAgent, "support-bot"))
			require.NoError(t, err)
			require.Nil(t, m)
			require.Equal(t, tt.want, errs)
		})
	}
}

func remove(objs []*resource.Object, kind, name string) []*resource.Object {
	var out []*resource.Object
	for _, o := range objs {
		if o.Kind != kind || o.Metadata.Name != name {
			out = append(out, o)
		}
	}
	return out
}

func TestOptions(t *testing.T) {
	t.Parallel()
	o := Options{ToolGatewayURL: "https://tools.example.com"}.WithDefaults()
	require.Equal(t, Options{
		ControlURL: "http://127.0.0.1:8080", ToolGatewayURL: "https://tools.example.com", MCPGatewayURL: "http://127.0.0.1:8082",
		ModelRouterURL: "http://127.0.0.1:8083", MemoryURL: "http://127.0.0.1:8084", RAGURL: "http://127.0.0.1:8085",
		TraceURL: "http://127.0.0.1:8086", AgBOMURL: "http://127.0.0.1:8080/v1/agbom",
	}, o)
	require.Equal(t, "https://warden.example.com/v1/agbom", Options{ControlURL: "https://warden.example.com/"}.WithDefaults().AgBOMURL)
	require.Equal(t, "https://[::1]:8083", LocalOptions("https", "::1").ModelRouterURL)
	require.NoError(t, o.Validate())
	o.TraceURL = "127.0.0.1:8086"
	require.ErrorContains(t, o.Validate(), "Options.TraceURL")
}

// BenchmarkCompile compiles an agent with 50 tools against the in-memory
// fake, so it measures resolution, hashing and encoding, not storage.
func BenchmarkCompile(b *testing.B) {
	objs := loadFleet(b)
	agent := find(objs, resource.KindAgent, "support-bot")
	base, err := resource.DecodeSpec[resource.ToolSpec](find(objs, resource.KindTool, "stripe.refund"))
	require.NoError(b, err)
	var tools []any
	for i := range 50 {
		name := "bench.tool_" + strconv.Itoa(i)
		spec, err := resource.ToMap(base)
		require.NoError(b, err)
		objs = append(objs, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindTool,
			Metadata: resource.ObjectMeta{Name: name, Namespace: "default", Generation: 1, ResourceVersion: strconv.Itoa(1000 + i)}, Spec: spec})
		tools = append(tools, map[string]any{"name": name})
	}
	agent.Spec["tools"] = tools
	c := newCompiler()
	r := &fakeReader{objs: objs}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m, errs, err := c.Compile(context.Background(), r, agent)
		if err != nil || len(errs) > 0 || m == nil {
			b.Fatal(err, errs)
		}
	}
}
