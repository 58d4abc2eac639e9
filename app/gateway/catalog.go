package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// nsName addresses a namespaced resource.
type nsName struct{ ns, name string }

// snapshot is the configuration of one tenant that calls read: tools,
// agents with their compiled manifests, and the policy set. It is
// immutable once built.
type snapshot struct {
	tools    map[nsName]*toolEntry
	agents   map[nsName]*agentEntry
	policies *policy.Set
	// mcpServers are the MCPServers with what discovery found; mcpTools
	// maps (namespace, server, tool on the server) to the gateway's tool.
	mcpServers map[nsName]*mcpServerEntry
	mcpTools   map[mcpKey]*toolEntry
}

// mcpKey addresses a tool on an MCP server.
type mcpKey struct{ ns, server, tool string }

// mcpServerEntry is an MCPServer as calls see it.
type mcpServerEntry struct {
	name string
	// quarantined says why the server is quarantined; empty when not.
	quarantined string
	status      resource.MCPServerStatus
}

// toolEntry is a Tool with its schemas compiled.
type toolEntry struct {
	obj    *resource.Object
	spec   resource.ToolSpec
	input  *jsonschema.Schema
	output *jsonschema.Schema
	// broken says why the tool's schemas do not compile; calls fail.
	broken string
	// name is the tool's name at the gateway.
	name string
	// mcp is the discovered definition of an MCP tool, nil otherwise.
	mcp *resource.MCPToolStatus
}

// agentEntry is an Agent and the tools of its newest compiled manifest.
type agentEntry struct {
	name     string
	manifest string
	// tools are the manifest's tools by name; nil when the agent has no
	// compiled manifest yet.
	tools map[string]resource.ManifestTool
	// bound are the agent's spec.policies.
	bound []string
	// mcpServers are the MCP servers of the manifest: their discovered
	// tools are the agent's too.
	mcpServers map[string]bool
	// manifestTools are the manifest's tools in order (tools/list).
	manifestTools []resource.ManifestTool
}

// catalog caches one snapshot per tenant. A configuration commit on any
// replica (Store.ListenConfig) drops the tenant's snapshot; the next call
// loads a new one, once, however many calls wait for it.
type catalog struct {
	st       store.Store
	policies *policy.Engine
	log      *slog.Logger

	mu      sync.Mutex
	entries map[string]*catalogEntry
	// schemas caches compiled tool schemas by uid and resourceVersion, so
	// that a snapshot reload recompiles only the tools that changed.
	schemas map[string]*toolEntry
}

type catalogEntry struct {
	// gen is the store's configuration generation of the tenant read
	// before the snapshot was loaded: a later commit makes it stale.
	gen   uint64
	ready chan struct{}
	snap  *snapshot
	err   error
}

func newCatalog(st store.Store, policies *policy.Engine, log *slog.Logger) *catalog {
	return &catalog{st: st, policies: policies, log: log, entries: map[string]*catalogEntry{}, schemas: map[string]*toolEntry{}}
}

// invalidate drops tenant's snapshot.
func (c *catalog) invalidate(tenant string) {
	c.mu.Lock()
	delete(c.entries, tenant)
	c.mu.Unlock()
}

// get returns tenant's snapshot, loading it when needed.
func (c *catalog) get(ctx context.Context, tenant string) (*snapshot, error) {
	// The generation moves as a configuration commit returns, before its
	// signal reaches invalidate: a call made after an apply answered is
	// never judged by the tools and policies from before it.
	gen := c.st.ConfigGeneration(tenant)
	c.mu.Lock()
	e, ok := c.entries[tenant]
	if !ok || e.gen < gen {
		e = &catalogEntry{ready: make(chan struct{}), gen: gen}
		c.entries[tenant] = e
		c.mu.Unlock()
		e.snap, e.err = c.load(context.WithoutCancel(ctx), tenant)
		close(e.ready)
		if e.err != nil {
			c.mu.Lock()
			if c.entries[tenant] == e {
				delete(c.entries, tenant)
			}
			c.mu.Unlock()
		}
		return e.snap, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.snap, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *catalog) load(ctx context.Context, tenant string) (*snapshot, error) {
	var tools, agents, manifests, policies, servers []*resource.Object
	err := c.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if tools, err = store.ListAll(ctx, r, resource.KindTool, nil); err != nil {
			return err
		}
		if servers, err = store.ListAll(ctx, r, resource.KindMCPServer, nil); err != nil {
			return err
		}
		if agents, err = store.ListAll(ctx, r, resource.KindAgent, nil); err != nil {
			return err
		}
		if manifests, err = store.ListAll(ctx, r, resource.KindCompiledAgentManifest, nil); err != nil {
			return err
		}
		policies, err = store.ListAll(ctx, r, resource.KindPolicy, nil)
		return err
	})
	if err != nil {
		return nil, errorf("load configuration of tenant %s: %w", tenant, err)
	}
	s := &snapshot{tools: make(map[nsName]*toolEntry, len(tools)), agents: make(map[nsName]*agentEntry, len(agents))}
	for _, o := range tools {
		s.tools[nsName{o.Metadata.Namespace, o.Metadata.Name}] = c.tool(o)
	}
	c.loadMCP(s, servers)
	byName := make(map[nsName]*resource.Object, len(manifests))
	for _, m := range manifests {
		byName[nsName{m.Metadata.Namespace, m.Metadata.Name}] = m
	}
	for _, o := range agents {
		spec, err := resource.DecodeSpec[resource.AgentSpec](o)
		if err != nil {
			c.log.Warn("skip undecodable agent", "tenant", tenant, "agent", o.Key().String(), "err", err)
			continue
		}
		ae := &agentEntry{name: o.Metadata.Name, bound: spec.Policies}
		mname, _ := o.Status["compiledManifest"].(string)
		if mname == "" {
			mname = compile.ManifestName(o.Metadata.Name, o.Metadata.Generation)
		}
		if m, ok := byName[nsName{o.Metadata.Namespace, mname}]; ok {
			ms, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m)
			if err == nil {
				ae.manifest = mname
				ae.tools = make(map[string]resource.ManifestTool, len(ms.Tools))
				for _, t := range ms.Tools {
					ae.tools[t.Name] = t
				}
				ae.manifestTools = ms.Tools
				ae.mcpServers = make(map[string]bool, len(ms.MCPServers))
				for _, m := range ms.MCPServers {
					ae.mcpServers[m.Name] = true
				}
			}
		}
		s.agents[nsName{o.Metadata.Namespace, o.Metadata.Name}] = ae
	}
	set, errs := c.policies.Build(policies)
	for _, e := range errs {
		c.log.Warn("policy does not compile; its broken rules deny", "tenant", tenant, "policy", e.Namespace+"/"+e.Name)
	}
	s.policies = set
	return s, nil
}

// tool returns the compiled entry of a Tool, from the schema cache when its
// uid and resourceVersion are unchanged.
func (c *catalog) tool(o *resource.Object) *toolEntry {
	key := o.Metadata.UID + "@" + o.Metadata.ResourceVersion
	c.mu.Lock()
	te, ok := c.schemas[key]
	c.mu.Unlock()
	if ok {
		return te
	}
	te = &toolEntry{obj: o, name: o.Metadata.Name}
	spec, err := resource.DecodeSpec[resource.ToolSpec](o)
	if err != nil {
		te.broken = err.Error()
	}
	te.spec = spec
	if te.input, err = compileSchema(spec.InputSchema); err != nil {
		te.broken = "spec.inputSchema: " + err.Error()
	}
	if te.output, err = compileSchema(spec.OutputSchema); err != nil {
		te.broken = "spec.outputSchema: " + err.Error()
	}
	c.mu.Lock()
	if len(c.schemas) > 4096 {
		clear(c.schemas)
	}
	c.schemas[key] = te
	c.mu.Unlock()
	return te
}

// compileSchema compiles a tool's JSON Schema; nil for none.
func compileSchema(s map[string]any) (*jsonschema.Schema, error) {
	if len(s) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// A tool's schema must not make the gateway fetch anything.
	c.UseLoader(noLoader{})
	if err := c.AddResource("tool.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("tool.json")
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote $ref %s is not allowed in a tool schema", url)
}
