package agbom

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Info is what a BOM records beyond the manifest and its resources.
type Info struct {
	// WardenVersion is the version of Warden that compiled the manifest.
	WardenVersion string
	// CompiledAt is when the manifest's content was compiled (RFC 3339);
	// empty means the manifest's creationTimestamp.
	CompiledAt string
	// Revision is the BOM's revision; zero means 1.
	Revision int64
}

// Build returns the BOM of manifest, a CompiledAgentManifest, reading the
// resources it names through r (a transaction of the manifest's tenant).
// The manifest holds what the agent was compiled to (route ids, tools with
// their schemaSha and side-effect class, MCP servers with pinned versions,
// working memory, policies with versions); the resources add what it
// leaves out: model versions, definition hashes, which MCP server serves a
// tool. A resource deleted since the compile leaves its component with
// what the manifest says. The error is only for store failures and
// manifests that do not decode.
func Build(ctx context.Context, r store.Reader, manifest *resource.Object, info Info) (*BOM, error) {
	if manifest == nil || manifest.Kind != resource.KindCompiledAgentManifest {
		return nil, fmt.Errorf("%w: not a CompiledAgentManifest", ErrInvalid)
	}
	spec, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](manifest)
	if err != nil {
		return nil, fmt.Errorf("agbom: manifest %s: %w", manifest.Metadata.Name, err)
	}
	sha, err := jcs.SHA256(manifest.Spec)
	if err != nil {
		return nil, fmt.Errorf("agbom: manifest %s: %w", manifest.Metadata.Name, err)
	}
	b := &BOM{
		Namespace: manifest.Metadata.Namespace, Agent: spec.Agent.Name, Generation: spec.Agent.Generation,
		Manifest: manifest.Metadata.Name, ManifestUID: manifest.Metadata.UID, ManifestSha: sha,
		Revision: max(info.Revision, 1), CompiledAt: info.CompiledAt, WardenVersion: info.WardenVersion,
		Endpoint: spec.Observability.AbomEndpoint,
	}
	if b.CompiledAt == "" {
		b.CompiledAt = manifest.Metadata.CreationTimestamp
	}
	bl := &builder{r: r, bom: b, ns: manifest.Metadata.Namespace}
	if err := bl.build(ctx, &spec); err != nil {
		return nil, err
	}
	b.normalize()
	return b, nil
}

type builder struct {
	r   store.Reader
	bom *BOM
	ns  string
	// uses are the agent's direct dependencies.
	uses []string
}

func (bl *builder) add(c Component, direct bool) {
	bl.bom.Components = append(bl.bom.Components, c)
	if direct {
		bl.uses = append(bl.uses, c.Ref)
	}
}

func (bl *builder) depend(from string, on ...string) {
	bl.bom.Dependencies = append(bl.bom.Dependencies, Dependency{Ref: from, DependsOn: on})
}

// get returns a resource of the manifest's namespace, nil when missing.
func (bl *builder) get(ctx context.Context, kind, name string) (*resource.Object, error) {
	if name == "" {
		return nil, nil
	}
	o, err := bl.r.ResourceGet(ctx, resource.Key{Kind: kind, Namespace: bl.ns, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agbom: read %s %s/%s: %w", kind, bl.ns, name, err)
	}
	return o, nil
}

// list returns every resource of kind in namespace ns ("" for all).
func (bl *builder) list(ctx context.Context, kind, ns string) ([]*resource.Object, error) {
	var out []*resource.Object
	p := store.ListParams{Kind: kind, Namespace: ns, Limit: store.MaxPageSize}
	for {
		page, err := bl.r.ResourceList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("agbom: list %s: %w", kind, err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		p.Continue = page.Continue
	}
}

func (bl *builder) build(ctx context.Context, m *resource.CompiledAgentManifestSpec) error {
	b := bl.bom
	agentRef := b.AgentRef()
	agent := Component{Ref: agentRef, Kind: KindAgent, Name: b.Agent, Version: "g" + strconv.FormatInt(b.Generation, 10),
		Properties: []Property{{"namespace", b.Namespace}, {"generation", strconv.FormatInt(b.Generation, 10)}, {"manifest", b.Manifest}}}
	agentObj, err := bl.get(ctx, resource.KindAgent, b.Agent)
	if err != nil {
		return err
	}
	// The agent's current spec names the Models of the route, but only
	// while it is still at the manifest's generation.
	var agentSpec *resource.AgentSpec
	if agentObj != nil && agentObj.Metadata.Generation == b.Generation {
		if s, err := resource.DecodeSpec[resource.AgentSpec](agentObj); err == nil {
			agentSpec = &s
			agent.Description = s.Description
		}
	}
	bl.add(agent, false)

	bl.framework(m.Framework)
	if err := bl.models(ctx, m.ModelRoute, agentSpec); err != nil {
		return err
	}
	servers := map[string]bool{}
	for _, s := range m.MCPServers {
		servers[s.Name] = true
		if err := bl.mcpServer(ctx, s.Name, &s, true); err != nil {
			return err
		}
	}
	if err := bl.tools(ctx, m.Tools, servers); err != nil {
		return err
	}
	if w := m.Memories.Working; w != nil {
		if err := bl.memory(ctx, w); err != nil {
			return err
		}
	}
	for i := range m.Memories.Knowledge {
		if err := bl.knowledge(ctx, &m.Memories.Knowledge[i]); err != nil {
			return err
		}
	}
	if err := bl.policies(ctx, m.Policies.Resolved); err != nil {
		return err
	}
	bl.depend(agentRef, bl.uses...)
	return nil
}

func (bl *builder) framework(f resource.ManifestFramework) {
	c := Component{Ref: ref(KindFramework, f.Adapter), Kind: KindFramework, Name: f.Adapter, Version: imageTag(f.AdapterImage),
		Properties: []Property{{"adapter", f.Adapter}, {"image", f.AdapterImage}}}
	bl.add(c, true)
}

// imageTag returns the tag (or digest) of an image reference.
func imageTag(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i+1:]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

// models adds the route's models. A model's identity across generations is
// its Model resource: the one the agent's spec names while it is at the
// manifest's generation, else the first Model (by name) of the namespace
// with the route id.
func (bl *builder) models(ctx context.Context, route resource.ManifestModelRoute, agent *resource.AgentSpec) error {
	ids := append([]string{route.Primary}, route.Fallback...)
	var named []string
	if agent != nil {
		named = append([]string{agent.ModelRoute.Primary}, agent.ModelRoute.Fallback...)
	}
	var byRoute map[string]*resource.Object
	for i, id := range ids {
		if id == "" {
			continue
		}
		var obj *resource.Object
		if len(named) == len(ids) {
			o, err := bl.get(ctx, resource.KindModel, named[i])
			if err != nil {
				return err
			}
			if o != nil && modelRouteID(o) == id {
				obj = o
			}
		}
		if obj == nil {
			if byRoute == nil {
				all, err := bl.list(ctx, resource.KindModel, bl.ns)
				if err != nil {
					return err
				}
				byRoute = map[string]*resource.Object{}
				for _, o := range all {
					if rid := modelRouteID(o); byRoute[rid] == nil || o.Metadata.Name < byRoute[rid].Metadata.Name {
						byRoute[rid] = o
					}
				}
			}
			obj = byRoute[id]
		}
		role := "primary"
		if i > 0 {
			role = fmt.Sprintf("fallback[%d]", i-1)
		}
		provider, model, _ := strings.Cut(id, ":")
		c := Component{Ref: ref(KindModel, id), Kind: KindModel, Name: model, Provider: provider,
			Properties: []Property{{"routeId", id}, {"route", role}}}
		if obj != nil {
			c.Ref = ref(KindModel, obj.Metadata.Name)
			c.Version, _ = obj.Spec["version"].(string)
			c.Hash = specHash(obj)
			c.Properties = append(c.Properties, Property{"resource", obj.Metadata.Name})
			if ep, _ := obj.Spec["endpoint"].(string); ep != "" {
				c.Endpoint = safeURL(ep)
			}
		}
		bl.add(c, true)
	}
	return nil
}

func modelRouteID(o *resource.Object) string {
	p, _ := o.Spec["provider"].(string)
	m, _ := o.Spec["model"].(string)
	return resource.ModelRouteID(p, m)
}

func (bl *builder) tools(ctx context.Context, tools []resource.ManifestTool, servers map[string]bool) error {
	for _, t := range tools {
		c := Component{Ref: ref(KindTool, t.Name), Kind: KindTool, Name: t.Name, Hash: t.SchemaSha, Endpoint: t.GatewayURL,
			Properties: []Property{{"sideEffect", t.SideEffect}, {"requiresApproval", strconv.FormatBool(t.RequiresApproval)}}}
		if t.SchemaSha != "" {
			c.Properties = append(c.Properties, Property{"schemaSha", t.SchemaSha})
		}
		obj, err := bl.get(ctx, resource.KindTool, t.Name)
		if err != nil {
			return err
		}
		var server string
		if obj != nil {
			c.Description, _ = obj.Spec["description"].(string)
			source, _ := obj.Spec["source"].(string)
			if source != "" {
				c.Properties = append(c.Properties, Property{"source", source})
			}
			switch source {
			case resource.ToolSourceMCP:
				if mcp, ok := obj.Spec["mcp"].(map[string]any); ok {
					server, _ = mcp["server"].(string)
					if tool, _ := mcp["tool"].(string); tool != "" {
						c.Properties = append(c.Properties, Property{"mcpTool", tool})
					}
				}
			case resource.ToolSourceREST:
				if rest, ok := obj.Spec["rest"].(map[string]any); ok {
					if u, _ := rest["url"].(string); u != "" {
						c.Properties = append(c.Properties, Property{"restUrl", safeURL(u)})
					}
				}
			}
		}
		if server != "" {
			c.Properties = append(c.Properties, Property{"mcpServer", server})
		}
		bl.add(c, true)
		if server != "" {
			if !servers[server] {
				servers[server] = true
				if err := bl.mcpServer(ctx, server, nil, false); err != nil {
					return err
				}
			}
			bl.depend(c.Ref, ref(KindMCPServer, server))
		}
	}
	return nil
}

// mcpServer adds an MCP server: from the manifest when the agent names it
// (m), else (a server reached only through an MCP tool) from its resource.
func (bl *builder) mcpServer(ctx context.Context, name string, m *resource.ManifestMCPServer, direct bool) error {
	c := Component{Ref: ref(KindMCPServer, name), Kind: KindMCPServer, Name: name}
	obj, err := bl.get(ctx, resource.KindMCPServer, name)
	if err != nil {
		return err
	}
	if m != nil {
		c.Version = m.PinnedVersion
		c.Endpoint = m.GatewayURL
		c.Properties = append(c.Properties, Property{"trustScore", strconv.FormatFloat(m.TrustScore, 'f', -1, 64)})
	}
	if obj != nil {
		c.Hash = specHash(obj)
		if m == nil {
			c.Version, _ = obj.Spec["pinnedVersion"].(string)
			if ts, ok := obj.Spec["trustScore"].(float64); ok {
				c.Properties = append(c.Properties, Property{"trustScore", strconv.FormatFloat(ts, 'f', -1, 64)})
			}
		}
		transport, _ := obj.Spec["transport"].(string)
		if transport == "" {
			transport = resource.MCPTransportHTTP
		}
		c.Properties = append(c.Properties, Property{"transport", transport})
		if u, _ := obj.Spec["url"].(string); u != "" {
			c.Properties = append(c.Properties, Property{"url", safeURL(u)})
		}
		if c.Hash != "" {
			c.Properties = append(c.Properties, Property{"definitionSha", c.Hash})
		}
	}
	pinned := "false"
	if c.Version != "" {
		pinned = "true"
	}
	c.Properties = append(c.Properties, Property{"pinned", pinned})
	bl.add(c, direct)
	return nil
}

func (bl *builder) memory(ctx context.Context, w *resource.ManifestMemory) error {
	c := Component{Ref: ref(KindMemory, w.Name), Kind: KindMemory, Name: w.Name, Endpoint: w.Endpoint,
		Properties: []Property{{"use", "working"}, {"namespace", w.Namespace}}}
	obj, err := bl.get(ctx, resource.KindMemory, w.Name)
	if err != nil {
		return err
	}
	if obj != nil {
		c.Hash = specHash(obj)
		typ, _ := obj.Spec["type"].(string)
		if typ == "" {
			typ = "working"
		}
		c.Properties = append(c.Properties, Property{"type", typ})
	}
	bl.add(c, true)
	return nil
}

// knowledge adds a RAG index the agent retrieves from, the knowledge
// sources it reads and the model it embeds with, each a component the
// index depends on.
func (bl *builder) knowledge(ctx context.Context, k *resource.ManifestKnowledge) error {
	ix := Component{Ref: ref(KindRAGIndex, k.Name), Kind: KindRAGIndex, Name: k.Name, Endpoint: k.Endpoint,
		Properties: []Property{{"namespace", k.Namespace}}}
	obj, err := bl.get(ctx, resource.KindRAGIndex, k.Name)
	if err != nil {
		return err
	}
	var deps []string
	if obj != nil {
		ix.Hash = specHash(obj)
		if spec, err := resource.DecodeSpec[resource.RAGIndexSpec](obj); err == nil {
			if spec.TopK > 0 {
				ix.Properties = append(ix.Properties, Property{"topK", strconv.FormatInt(spec.TopK, 10)})
			}
			if c := spec.Chunking; c != nil {
				ix.Properties = append(ix.Properties, Property{"chunkSize", strconv.FormatInt(c.Size, 10)}, Property{"chunkOverlap", strconv.FormatInt(c.Overlap, 10)})
			}
			if spec.ScanInjection != "" {
				ix.Properties = append(ix.Properties, Property{"scanInjection", spec.ScanInjection})
			}
		}
	}
	for _, name := range k.Sources {
		c, err := bl.knowledgeSource(ctx, name)
		if err != nil {
			return err
		}
		bl.add(c, false)
		deps = append(deps, c.Ref)
	}
	if k.EmbeddingModel != "" {
		ix.Properties = append(ix.Properties, Property{"embeddingModel", k.EmbeddingModel})
		c, err := bl.embeddingModel(ctx, obj, k.EmbeddingModel)
		if err != nil {
			return err
		}
		bl.add(c, false)
		deps = append(deps, c.Ref)
	}
	bl.add(ix, true)
	if len(deps) > 0 {
		bl.depend(ix.Ref, deps...)
	}
	return nil
}

// knowledgeSource describes a KnowledgeSource: its type and where its
// documents come from (a URL without credentials, a path under the RAG
// file root, or the number of inline documents), hashed by its spec.
func (bl *builder) knowledgeSource(ctx context.Context, name string) (Component, error) {
	c := Component{Ref: ref(KindKnowledgeSource, name), Kind: KindKnowledgeSource, Name: name}
	obj, err := bl.get(ctx, resource.KindKnowledgeSource, name)
	if err != nil || obj == nil {
		return c, err
	}
	c.Hash = specHash(obj)
	spec, err := resource.DecodeSpec[resource.KnowledgeSourceSpec](obj)
	if err != nil {
		return c, nil
	}
	c.Properties = append(c.Properties, Property{"type", spec.Type})
	if u := safeURL(spec.URL); u != "" {
		c.Properties = append(c.Properties, Property{"url", u})
	}
	if spec.Path != "" {
		c.Properties = append(c.Properties, Property{"path", spec.Path})
	}
	if spec.Type == "inline" {
		n := len(spec.Documents)
		if spec.Content != "" {
			n++
		}
		c.Properties = append(c.Properties, Property{"documents", strconv.Itoa(n)})
	}
	if spec.Schedule != "" {
		c.Properties = append(c.Properties, Property{"schedule", spec.Schedule})
	}
	return c, nil
}

// embeddingModel describes the Model an index embeds with: the one its
// spec names when its route id is still the manifest's, else the route id
// alone.
func (bl *builder) embeddingModel(ctx context.Context, index *resource.Object, id string) (Component, error) {
	provider, model, _ := strings.Cut(id, ":")
	c := Component{Ref: ref(KindModel, id), Kind: KindModel, Name: model, Provider: provider,
		Properties: []Property{{"routeId", id}, {"use", "embedding"}}}
	var name string
	if index != nil {
		if e, ok := index.Spec["embedding"].(map[string]any); ok {
			name, _ = e["modelRef"].(string)
		}
	}
	obj, err := bl.get(ctx, resource.KindModel, name)
	if err != nil || obj == nil || modelRouteID(obj) != id {
		return c, err
	}
	c.Ref = ref(KindModel, obj.Metadata.Name)
	c.Version, _ = obj.Spec["version"].(string)
	c.Hash = specHash(obj)
	c.Properties = append(c.Properties, Property{"resource", obj.Metadata.Name})
	return c, nil
}

// policies adds the resolved policies. A policy bound by an explicit name
// lives in the agent's namespace; one bound by its selector may live in
// another, where it is found by name and version.
func (bl *builder) policies(ctx context.Context, resolved []string) error {
	var all []*resource.Object
	for _, pr := range resolved {
		name, version, _ := strings.Cut(pr, "@")
		obj, err := bl.get(ctx, resource.KindPolicy, name)
		if err != nil {
			return err
		}
		if obj == nil || policy.Version(obj) != version {
			if all == nil {
				if all, err = bl.list(ctx, resource.KindPolicy, ""); err != nil {
					return err
				}
			}
			obj = nil
			for _, o := range all {
				if o.Metadata.Name == name && policy.Version(o) == version {
					obj = o
					break
				}
			}
		}
		ns := bl.ns
		c := Component{Kind: KindPolicy, Name: name, Version: version}
		if obj != nil {
			ns = obj.Metadata.Namespace
			c.Hash = specHash(obj)
			c.Description, _ = obj.Spec["description"].(string)
		}
		c.Ref = ref(KindPolicy, ns+"/"+name)
		c.Properties = []Property{{"namespace", ns}, {"ref", pr}}
		bl.add(c, true)
	}
	return nil
}

// specHash is "sha256:<hex>" of the canonical JSON of a resource's spec,
// or "" when it has none.
func specHash(o *resource.Object) string {
	h, err := jcs.SHA256(o.Spec)
	if err != nil {
		return ""
	}
	return h
}

// safeURL drops credentials, query and fragment from a URL: a BOM names
// where a component is, never a secret someone put into its address.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = nil, "", "", "", false
	return u.String()
}
