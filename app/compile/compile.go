package compile

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// LabelAgent labels a manifest with the name of its agent.
const LabelAgent = "warden.dev/agent"

// Compiler compiles agents into CompiledAgentManifests and reconciles
// applies. It holds no per-call state and is safe for concurrent use.
type Compiler struct {
	opts   Options
	engine *policy.Engine
}

// New returns a Compiler writing the addresses of opts (call
// opts.WithDefaults first) and evaluating policies with engine.
func New(opts Options, engine *policy.Engine) *Compiler {
	if engine == nil {
		engine = policy.NewEngine()
	}
	return &Compiler{opts: opts, engine: engine}
}

// ManifestName returns the name of an agent's manifest, "<agent>-g<generation>".
func ManifestName(agent string, generation int64) string {
	return agent + "-g" + strconv.FormatInt(generation, 10)
}

// problem is a field error of an agent, and the referenced object whose
// content (rather than the agent's) is at fault, if any.
type problem struct {
	resource.FieldError
	cause     *resource.Object
	causePath string
}

// result is everything compiling one agent produced.
type result struct {
	manifest *resource.Object
	spec     resource.CompiledAgentManifestSpec
	agent    resource.AgentSpec
	problems []problem
}

// Compile returns the CompiledAgentManifest of agent, resolving every
// reference through r. Problems with the agent's references (a missing
// Model, Tool, MCPServer, Memory, RAGIndex (or its sources or embedding
// Model) or Policy, a model lacking a required
// capability, a quarantined MCP server) are returned as field errors with
// paths into the agent, and no manifest; the error is only for store
// failures.
func (c *Compiler) Compile(ctx context.Context, r store.Reader, agent *resource.Object) (*resource.Object, resource.FieldErrors, error) {
	res := newResolver(r)
	set, err := c.policySet(ctx, res)
	if err != nil {
		return nil, nil, err
	}
	out, err := c.compile(ctx, res, set, agent)
	if err != nil {
		return nil, nil, err
	}
	if len(out.problems) > 0 {
		errs := make(resource.FieldErrors, len(out.problems))
		for i, p := range out.problems {
			errs[i] = p.FieldError
		}
		return nil, errs, nil
	}
	return out.manifest, nil, nil
}

// policySet builds the tenant's policies into a set; the engine compiles
// only those it has not seen at their current version.
func (c *Compiler) policySet(ctx context.Context, res *resolver) (*policy.Set, error) {
	policies, err := res.list(ctx, resource.KindPolicy, "")
	if err != nil {
		return nil, err
	}
	set, _ := c.engine.Build(policies)
	return set, nil
}

func (c *Compiler) compile(ctx context.Context, res *resolver, set *policy.Set, agent *resource.Object) (*result, error) {
	out := &result{}
	name, ns := agent.Metadata.Name, agent.Metadata.Namespace
	add := func(path, code, msg string, cause *resource.Object, causePath string) {
		out.problems = append(out.problems, problem{
			FieldError: resource.FieldError{Path: path, Code: code, Message: msg},
			cause:      cause, causePath: causePath,
		})
	}
	spec, err := resource.DecodeSpec[resource.AgentSpec](agent)
	if err != nil {
		add("spec", resource.ErrCodeInvalid, fmt.Sprintf("agent %s: %v", name, err), nil, "")
		return out, nil
	}
	out.agent = spec
	m := &out.spec
	m.Agent = resource.ManifestAgent{Name: name, Generation: agent.Metadata.Generation}

	version := spec.Framework.Version
	if version == "" {
		version = resource.DefaultFrameworkVersion
	}
	image := spec.Framework.Image
	if image == "" {
		image = resource.AdapterImage(spec.Framework.Adapter, version)
	}
	m.Framework = resource.ManifestFramework{Adapter: spec.Framework.Adapter, AdapterImage: image}

	// Models and their capabilities.
	req := resource.AgentRequires{ToolUse: len(spec.Tools) > 0}
	if spec.Requires != nil {
		req = *spec.Requires
	}
	m.ModelRoute.Fallback = []string{}
	route := append([]string{spec.ModelRoute.Primary}, spec.ModelRoute.Fallback...)
	for i, modelName := range route {
		path := "spec.modelRoute.primary"
		if i > 0 {
			path = fmt.Sprintf("spec.modelRoute.fallback[%d]", i-1)
		}
		obj, err := res.get(ctx, resource.KindModel, ns, modelName)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			add(path, resource.ErrCodeNotFound, fmt.Sprintf("agent %s routes to model %q, but no Model %q exists in namespace %s", name, modelName, modelName, ns), nil, "")
			continue
		}
		ms, err := resource.DecodeSpec[resource.ModelSpec](obj)
		if err != nil {
			add(path, resource.ErrCodeInvalid, fmt.Sprintf("model %s: %v", modelName, err), obj, "spec")
			continue
		}
		id := resource.ModelRouteID(ms.Provider, ms.Model)
		if i == 0 {
			m.ModelRoute.Primary = id
		} else {
			m.ModelRoute.Fallback = append(m.ModelRoute.Fallback, id)
		}
		for _, miss := range missingCapabilities(req, ms.Capabilities) {
			add(path, resource.ErrCodeForbidden,
				fmt.Sprintf("model %s (Model %s) lacks %s, which agent %s requires", id, modelName, miss.what, name),
				obj, "spec.capabilities."+miss.field)
		}
	}

	// Tools.
	m.Tools = make([]resource.ManifestTool, 0, len(spec.Tools))
	for i, at := range spec.Tools {
		path := fmt.Sprintf("spec.tools[%d].name", i)
		obj, err := res.get(ctx, resource.KindTool, ns, at.Name)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			add(path, resource.ErrCodeNotFound, fmt.Sprintf("agent %s uses tool %q, but no Tool %q exists in namespace %s", name, at.Name, at.Name, ns), nil, "")
			continue
		}
		// The tool is read field by field rather than through DecodeSpec:
		// decoding would encode and parse its whole input schema, the
		// largest part of most agents' dependencies, only to hash it.
		ts := obj.Spec
		class, _ := ts["sideEffect"].(string)
		mt := resource.ManifestTool{Name: at.Name, SideEffect: class}
		mt.GatewayURL, _ = ts["gatewayUrl"].(string)
		if mt.GatewayURL == "" {
			mt.GatewayURL = c.opts.ToolGatewayURL
		}
		if schema, ok := ts["inputSchema"].(map[string]any); ok {
			sha, err := jcs.SHA256(schema)
			if err != nil {
				add(path, resource.ErrCodeInvalid, fmt.Sprintf("tool %s: input schema has no canonical JSON: %v", at.Name, err), obj, "spec.inputSchema")
				continue
			}
			mt.SchemaSha = sha
		}
		toolApproval, toolSays := ts["requiresApproval"].(bool)
		switch {
		case at.RequiresApproval != nil:
			mt.RequiresApproval = *at.RequiresApproval
		case toolSays:
			mt.RequiresApproval = toolApproval
		default:
			mt.RequiresApproval = resource.DefaultRequiresApproval(class)
		}
		if source, _ := ts["source"].(string); source == resource.ToolSourceMCP {
			server := ""
			if mcp, ok := ts["mcp"].(map[string]any); ok {
				server, _ = mcp["server"].(string)
			}
			srv, err := res.get(ctx, resource.KindMCPServer, ns, server)
			if err != nil {
				return nil, err
			}
			if srv == nil {
				add(path, resource.ErrCodeNotFound, fmt.Sprintf("tool %s is served by MCP server %q, but no MCPServer %q exists in namespace %s", at.Name, server, server, ns), obj, "spec.mcp.server")
				continue
			}
			if q, _ := srv.Spec["quarantined"].(bool); q {
				add(path, resource.ErrCodeForbidden, fmt.Sprintf("tool %s is served by MCP server %s, which is quarantined", at.Name, server), srv, "spec.quarantined")
				continue
			}
		}
		m.Tools = append(m.Tools, mt)
	}

	// MCP servers.
	m.MCPServers = make([]resource.ManifestMCPServer, 0, len(spec.MCPServers))
	for i, ref := range spec.MCPServers {
		path := fmt.Sprintf("spec.mcpServers[%d].name", i)
		obj, err := res.get(ctx, resource.KindMCPServer, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			add(path, resource.ErrCodeNotFound, fmt.Sprintf("agent %s uses MCP server %q, but no MCPServer %q exists in namespace %s", name, ref.Name, ref.Name, ns), nil, "")
			continue
		}
		ss, err := resource.DecodeSpec[resource.MCPServerSpec](obj)
		if err != nil {
			add(path, resource.ErrCodeInvalid, fmt.Sprintf("MCP server %s: %v", ref.Name, err), obj, "spec")
			continue
		}
		if ss.Quarantined {
			add(path, resource.ErrCodeForbidden, fmt.Sprintf("agent %s uses MCP server %s, which is quarantined", name, ref.Name), obj, "spec.quarantined")
			continue
		}
		ms := resource.ManifestMCPServer{Name: ref.Name, GatewayURL: ss.GatewayURL, PinnedVersion: ss.PinnedVersion, TrustScore: resource.DefaultMCPTrustScore}
		if ms.GatewayURL == "" {
			ms.GatewayURL = joinURL(c.opts.MCPGatewayURL, "v1", "mcp", ref.Name)
		}
		if ss.TrustScore != nil {
			ms.TrustScore = *ss.TrustScore
		}
		m.MCPServers = append(m.MCPServers, ms)
	}

	// Memory.
	if spec.Memory != nil && spec.Memory.Working != "" {
		memName := spec.Memory.Working
		obj, err := res.get(ctx, resource.KindMemory, ns, memName)
		if err != nil {
			return nil, err
		}
		switch {
		case obj == nil:
			add("spec.memory.working", resource.ErrCodeNotFound, fmt.Sprintf("agent %s uses working memory %q, but no Memory %q exists in namespace %s", name, memName, memName, ns), nil, "")
		default:
			mem, err := resource.DecodeSpec[resource.MemorySpec](obj)
			switch {
			case err != nil:
				add("spec.memory.working", resource.ErrCodeInvalid, fmt.Sprintf("memory %s: %v", memName, err), obj, "spec")
			case mem.Type != "" && mem.Type != "working":
				add("spec.memory.working", resource.ErrCodeInvalid, fmt.Sprintf("agent %s uses memory %s as working memory, but its type is %s", name, memName, mem.Type), obj, "spec.type")
			default:
				endpoint := mem.Endpoint
				if endpoint == "" {
					endpoint = c.opts.MemoryURL
				}
				m.Memories.Working = &resource.ManifestMemory{Endpoint: endpoint, Namespace: ns, Name: memName}
			}
		}
	}

	// Knowledge: RAG indexes, resolved with their sources and embedding
	// model.
	if spec.Memory != nil {
		for i, ixName := range spec.Memory.Knowledge {
			k, err := c.knowledge(ctx, res, fmt.Sprintf("spec.memory.knowledge[%d]", i), name, ns, ixName, add)
			if err != nil {
				return nil, err
			}
			if k != nil {
				m.Memories.Knowledge = append(m.Memories.Knowledge, *k)
			}
		}
	}

	// Policies: the explicitly bound ones, then every one whose selector
	// binds it to this agent in some environment.
	resolved := []string{}
	for i, pn := range spec.Policies {
		obj, err := res.get(ctx, resource.KindPolicy, ns, pn)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			add(fmt.Sprintf("spec.policies[%d]", i), resource.ErrCodeNotFound, fmt.Sprintf("agent %s binds policy %q, but no Policy %q exists in namespace %s", name, pn, pn, ns), nil, "")
			continue
		}
		resolved = append(resolved, policy.Ref(pn, policy.Version(obj)))
	}
	for _, ref := range set.Bound(ns, name) {
		resolved = append(resolved, ref.String())
	}
	slices.Sort(resolved)
	m.Policies.Resolved = slices.Compact(resolved)

	m.Observability = resource.ManifestObservability{
		TraceEndpoint: c.opts.TraceURL,
		AbomEndpoint:  joinURL(c.opts.AgBOMURL, name),
	}

	if len(out.problems) > 0 {
		return out, nil
	}
	out.manifest = &resource.Object{
		APIVersion: resource.InternalGroupVersion,
		Kind:       resource.KindCompiledAgentManifest,
		Metadata: resource.ObjectMeta{
			Name:      ManifestName(name, agent.Metadata.Generation),
			Namespace: ns,
			Labels:    map[string]string{LabelAgent: name},
		},
		Spec: manifestMap(m),
	}
	return out, nil
}

// manifestMap renders the manifest spec as the generic JSON object stored
// in Object.Spec, field by field: a JSON round trip through ToMap would
// cost more than the rest of the compilation. Optional fields appear
// exactly as SPEC.md says: schemaSha only when the tool has an input
// schema, requiresApproval only when true, memories.working only when set;
// memories.knowledge only when the agent binds an index.
func manifestMap(m *resource.CompiledAgentManifestSpec) map[string]any {
	fallback := make([]any, len(m.ModelRoute.Fallback))
	for i, f := range m.ModelRoute.Fallback {
		fallback[i] = f
	}
	tools := make([]any, len(m.Tools))
	for i, t := range m.Tools {
		tm := map[string]any{"name": t.Name, "gatewayUrl": t.GatewayURL, "sideEffect": t.SideEffect}
		if t.SchemaSha != "" {
			tm["schemaSha"] = t.SchemaSha
		}
		if t.RequiresApproval {
			tm["requiresApproval"] = true
		}
		tools[i] = tm
	}
	servers := make([]any, len(m.MCPServers))
	for i, sv := range m.MCPServers {
		servers[i] = map[string]any{"name": sv.Name, "gatewayUrl": sv.GatewayURL, "pinnedVersion": sv.PinnedVersion, "trustScore": sv.TrustScore}
	}
	memories := map[string]any{}
	if w := m.Memories.Working; w != nil {
		memories["working"] = map[string]any{"endpoint": w.Endpoint, "namespace": w.Namespace, "name": w.Name}
	}
	if len(m.Memories.Knowledge) > 0 {
		knowledge := make([]any, len(m.Memories.Knowledge))
		for i, k := range m.Memories.Knowledge {
			sources := make([]any, len(k.Sources))
			for j, src := range k.Sources {
				sources[j] = src
			}
			km := map[string]any{"endpoint": k.Endpoint, "namespace": k.Namespace, "name": k.Name, "sources": sources}
			if k.EmbeddingModel != "" {
				km["embeddingModel"] = k.EmbeddingModel
			}
			knowledge[i] = km
		}
		memories["knowledge"] = knowledge
	}
	resolved := make([]any, len(m.Policies.Resolved))
	for i, p := range m.Policies.Resolved {
		resolved[i] = p
	}
	return map[string]any{
		"agent":         map[string]any{"name": m.Agent.Name, "generation": m.Agent.Generation},
		"framework":     map[string]any{"adapter": m.Framework.Adapter, "adapterImage": m.Framework.AdapterImage},
		"modelRoute":    map[string]any{"primary": m.ModelRoute.Primary, "fallback": fallback},
		"tools":         tools,
		"mcpServers":    servers,
		"memories":      memories,
		"policies":      map[string]any{"resolved": resolved},
		"observability": map[string]any{"traceEndpoint": m.Observability.TraceEndpoint, "abomEndpoint": m.Observability.AbomEndpoint},
	}
}

// knowledge resolves the RAG index ixName of agent name: it must exist,
// and so must every KnowledgeSource it reads and its embedding Model, whose
// route id the manifest names. Problems are added at path; nil means none
// could be resolved.
func (c *Compiler) knowledge(ctx context.Context, res *resolver, path, name, ns, ixName string,
	add func(path, code, msg string, cause *resource.Object, causePath string)) (*resource.ManifestKnowledge, error) {
	obj, err := res.get(ctx, resource.KindRAGIndex, ns, ixName)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		add(path, resource.ErrCodeNotFound, fmt.Sprintf("agent %s retrieves from RAG index %q, but no RAGIndex %q exists in namespace %s", name, ixName, ixName, ns), nil, "")
		return nil, nil
	}
	ix, err := resource.DecodeSpec[resource.RAGIndexSpec](obj)
	if err != nil {
		add(path, resource.ErrCodeInvalid, fmt.Sprintf("RAG index %s: %v", ixName, err), obj, "spec")
		return nil, nil
	}
	out := &resource.ManifestKnowledge{Endpoint: c.opts.RAGURL, Namespace: ns, Name: ixName, Sources: make([]string, 0, len(ix.Sources))}
	ok := true
	for j, src := range ix.Sources {
		so, err := res.get(ctx, resource.KindKnowledgeSource, ns, src)
		if err != nil {
			return nil, err
		}
		if so == nil {
			add(path, resource.ErrCodeNotFound, fmt.Sprintf("RAG index %s reads knowledge source %q, but no KnowledgeSource %q exists in namespace %s", ixName, src, src, ns),
				obj, fmt.Sprintf("spec.sources[%d]", j))
			ok = false
			continue
		}
		out.Sources = append(out.Sources, src)
	}
	if ix.Embedding != nil && ix.Embedding.ModelRef != "" {
		ref := ix.Embedding.ModelRef
		mo, err := res.get(ctx, resource.KindModel, ns, ref)
		if err != nil {
			return nil, err
		}
		if mo == nil {
			add(path, resource.ErrCodeNotFound, fmt.Sprintf("RAG index %s embeds with model %q, but no Model %q exists in namespace %s", ixName, ref, ref, ns),
				obj, "spec.embedding.modelRef")
			return nil, nil
		}
		ms, err := resource.DecodeSpec[resource.ModelSpec](mo)
		if err != nil {
			add(path, resource.ErrCodeInvalid, fmt.Sprintf("model %s: %v", ref, err), mo, "spec")
			return nil, nil
		}
		out.EmbeddingModel = resource.ModelRouteID(ms.Provider, ms.Model)
	}
	if !ok {
		return nil, nil
	}
	return out, nil
}

type missing struct{ field, what string }

// missingCapabilities lists what a model lacks of what the agent requires.
func missingCapabilities(req resource.AgentRequires, has resource.ModelCapabilities) []missing {
	var out []missing
	if req.ToolUse && !has.ToolUse {
		out = append(out, missing{"toolUse", "toolUse"})
	}
	if req.Streaming && !has.Streaming {
		out = append(out, missing{"streaming", "streaming"})
	}
	if req.Vision && !has.Vision {
		out = append(out, missing{"vision", "vision"})
	}
	if req.JSONMode && !has.JSONMode {
		out = append(out, missing{"jsonMode", "jsonMode"})
	}
	if req.MinContextWindow > 0 && has.ContextWindow < req.MinContextWindow {
		out = append(out, missing{"contextWindow", fmt.Sprintf("a context window of %d tokens (it has %d)", req.MinContextWindow, has.ContextWindow)})
	}
	return out
}

// Canonical returns the RFC 8785 canonical JSON of a manifest; two
// compilations of the same inputs give the same bytes.
func Canonical(manifest *resource.Object) ([]byte, error) {
	return jcs.Marshal(manifest)
}
