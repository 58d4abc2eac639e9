package gateway

import (
	"context"
	"slices"
	"time"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
)

// loadMCP adds the MCP servers of a tenant to a snapshot: each server's
// quarantine, and its discovered tools as tools named "<server>.<tool>"
// (unless a Tool record of source mcp declares the tool, which then wins
// with its own class, schemas and safety settings).
func (c *catalog) loadMCP(s *snapshot, servers []*resource.Object) {
	s.mcpServers = make(map[nsName]*mcpServerEntry, len(servers))
	s.mcpTools = map[mcpKey]*toolEntry{}
	for _, te := range s.tools {
		if te.spec.Source == resource.ToolSourceMCP && te.spec.MCP != nil {
			s.mcpTools[mcpKey{te.obj.Metadata.Namespace, te.spec.MCP.Server, te.spec.MCP.Tool}] = te
		}
	}
	for _, o := range servers {
		ns := o.Metadata.Namespace
		st, err := resource.DecodeStatus[resource.MCPServerStatus](o)
		if err != nil {
			c.log.Warn("skip undecodable MCP server status", "server", o.Key().String(), "err", err)
		}
		se := &mcpServerEntry{name: o.Metadata.Name, status: st}
		if q, _ := o.Spec["quarantined"].(bool); q {
			se.quarantined = "spec.quarantined is true"
		}
		if st.Quarantine != nil {
			se.quarantined = st.Quarantine.Reason
		}
		s.mcpServers[nsName{ns, o.Metadata.Name}] = se
		for i := range st.Tools {
			dt := &st.Tools[i]
			key := mcpKey{ns, o.Metadata.Name, dt.Name}
			if te, ok := s.mcpTools[key]; ok {
				// The declared entry is shared with other snapshots
				// (catalog.schemas): this one gets a copy.
				cp := *te
				cp.mcp = dt
				s.tools[nsName{ns, cp.name}] = &cp
				s.mcpTools[key] = &cp
				continue
			}
			name := resource.MCPToolName(o.Metadata.Name, dt.Name)
			if _, taken := s.tools[nsName{ns, name}]; taken {
				continue
			}
			class := dt.SideEffect
			if class == "" {
				class = resource.MCPSideEffect(dt.Annotations)
			}
			te := &toolEntry{name: name, mcp: dt, spec: resource.ToolSpec{
				Description: dt.Description, Source: resource.ToolSourceMCP, SideEffect: class,
				InputSchema: dt.InputSchema, MCP: &resource.ToolMCP{Server: o.Metadata.Name, Tool: dt.Name},
			}}
			// A third-party schema the gateway cannot compile is not
			// enforced here; the server validates its own input.
			te.input, _ = compileSchema(dt.InputSchema)
			s.tools[nsName{ns, name}] = te
			s.mcpTools[key] = te
		}
	}
}

// mcpRefusal refuses a call to a tool of a quarantined MCP server, or to a
// tool whose definition the scanner withheld.
func (c *call) mcpRefusal() *apierr.Error {
	spec := &c.tool.spec
	if spec.Source != resource.ToolSourceMCP || spec.MCP == nil {
		return nil
	}
	se, ok := c.snap.mcpServers[nsName{c.p.Namespace, spec.MCP.Server}]
	if !ok {
		return nil
	}
	if se.quarantined != "" {
		return apierr.New(apierr.CodeQuarantined, "MCP server %q is quarantined: %s", se.name, se.quarantined).
			WithDetails(map[string]any{"server": se.name, "tool": c.req.Tool})
	}
	if c.tool.mcp != nil && c.tool.mcp.Blocked {
		return apierr.New(apierr.CodePolicyDenied, "tool %q of MCP server %q is withheld: its definition carries prompt-injection patterns", c.req.Tool, se.name).
			WithDetails(map[string]any{"policyId": "", "policyVersion": "", "rule": "mcp.scanDescriptions"})
	}
	return nil
}

// MCPTarget names a tool by its MCP server and its name there, for calls
// that arrive through the MCP gateway.
type MCPTarget struct {
	Server string
	Tool   string
}

// resolveMCP finds the gateway's tool for an MCP target.
func (c *call) resolveMCP() *apierr.Error {
	t := c.req.MCP
	te, ok := c.snap.mcpTools[mcpKey{c.p.Namespace, t.Server, t.Tool}]
	if !ok {
		if _, known := c.snap.mcpServers[nsName{c.p.Namespace, t.Server}]; !known {
			return apierr.New(apierr.CodeNotFound, "MCP server %q is not defined in namespace %q", t.Server, c.p.Namespace)
		}
		return apierr.New(apierr.CodeNotFound, "MCP server %q has no tool %q (as last discovered: POST /v1/mcp/discover refreshes it)", t.Server, t.Tool)
	}
	c.req.Tool = te.name
	return nil
}

// AgentTool is one tool an agent may call, as an MCP client lists it.
type AgentTool struct {
	// Name is the gateway's name of the tool.
	Name         string
	Description  string
	Title        string
	InputSchema  map[string]any
	OutputSchema map[string]any
	Annotations  map[string]any
	SideEffect   string
	// Server is the MCP server of an MCP tool.
	Server string
}

// AgentTools lists the tools the agent p may call: those of its newest
// compiled manifest, then the discovered tools of every MCP server the
// manifest names that are not quarantined or withheld, sorted by name.
func (g *Gateway) AgentTools(ctx context.Context, p auth.Principal) ([]AgentTool, error) {
	if err := g.requireAgent(p); err != nil {
		return nil, err
	}
	snap, err := g.catalog.get(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	ae, ok := snap.agents[nsName{p.Namespace, p.Agent}]
	if !ok {
		return nil, apierr.New(apierr.CodeForbidden, "agent %q does not exist in namespace %q", p.Agent, p.Namespace)
	}
	seen := map[string]bool{}
	var out []AgentTool
	add := func(te *toolEntry, class string) {
		if seen[te.name] || te.broken != "" {
			return
		}
		if te.spec.Source == resource.ToolSourceFunction {
			// Function tools run in the agent's own process.
			return
		}
		at := AgentTool{Name: te.name, Description: te.spec.Description, InputSchema: te.spec.InputSchema,
			OutputSchema: te.spec.OutputSchema, SideEffect: class}
		if te.spec.Source == resource.ToolSourceMCP && te.spec.MCP != nil {
			se := snap.mcpServers[nsName{p.Namespace, te.spec.MCP.Server}]
			if se != nil && se.quarantined != "" || te.mcp != nil && te.mcp.Blocked {
				return
			}
			at.Server = te.spec.MCP.Server
			if te.mcp != nil {
				if at.Description == "" {
					at.Description = te.mcp.Description
				}
				if at.InputSchema == nil {
					at.InputSchema = te.mcp.InputSchema
				}
				at.Title, at.Annotations = te.mcp.Title, te.mcp.Annotations
			}
		}
		seen[te.name] = true
		out = append(out, at)
	}
	for _, mt := range ae.manifestTools {
		if te, ok := snap.tools[nsName{p.Namespace, mt.Name}]; ok {
			add(te, mt.SideEffect)
		}
	}
	for server := range ae.mcpServers {
		se := snap.mcpServers[nsName{p.Namespace, server}]
		if se == nil {
			continue
		}
		for _, dt := range se.status.Tools {
			if te, ok := snap.mcpTools[mcpKey{p.Namespace, server, dt.Name}]; ok {
				add(te, te.spec.SideEffect)
			}
		}
	}
	slices.SortFunc(out, func(a, b AgentTool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// WaitCall waits, at most wait, for the agent p's call name to finish and
// returns its record as it then stands.
func (g *Gateway) WaitCall(ctx context.Context, p auth.Principal, name string, wait time.Duration) (*resource.Object, error) {
	if err := g.requireAgent(p); err != nil {
		return nil, err
	}
	obj, err := g.waitFor(ctx, p.Tenant, p.Namespace, name, min(max(wait, 0), MaxWait), Finished)
	if err != nil {
		return nil, err
	}
	if a, _ := obj.Spec["agentRef"].(map[string]any); a != nil && a["name"] != p.Agent {
		return nil, apierr.New(apierr.CodeNotFound, "tool call %q not found in namespace %q", name, p.Namespace)
	}
	return obj, nil
}
