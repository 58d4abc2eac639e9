package gateway

import (
	"context"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
)

// authenticate is step 2. The agent, its namespace and environment come
// from the verified credential (never from the body); the agent must exist
// and its newest compiled manifest must list the tool.
func (c *call) authenticate(ctx context.Context) error {
	ae, ok := c.snap.agents[nsName{c.p.Namespace, c.p.Agent}]
	if !ok {
		err := apierr.New(apierr.CodeForbidden, "agent %q does not exist in namespace %q", c.p.Agent, c.p.Namespace)
		c.g.auditRefusal(ctx, c.p, "toolcalls/create", "Tool/"+c.req.Tool, "", err)
		return err
	}
	if ae.tools == nil {
		return apierr.New(apierr.CodeForbidden, "agent %q has no compiled manifest yet: apply it and check `warden describe agent %s`", ae.name, ae.name)
	}
	mt, ok := ae.tools[c.req.Tool]
	if !ok && c.tool.spec.Source == resource.ToolSourceMCP && c.tool.spec.MCP != nil && ae.mcpServers[c.tool.spec.MCP.Server] {
		// The manifest names the tool's MCP server: its tools are the
		// agent's, classified by the Tool record or the discovery.
		mt, ok = resource.ManifestTool{Name: c.req.Tool, SideEffect: c.tool.spec.SideEffect}, true
		mt.RequiresApproval = resource.DefaultRequiresApproval(mt.SideEffect)
		if c.tool.spec.RequiresApproval != nil {
			mt.RequiresApproval = *c.tool.spec.RequiresApproval
		}
	}
	if !ok {
		err := apierr.New(apierr.CodeForbidden, "agent %q does not reference tool %q in its compiled manifest %s", ae.name, c.req.Tool, ae.manifest)
		c.g.auditRefusal(ctx, c.p, "toolcalls/create", "Tool/"+c.req.Tool, "", err)
		return err
	}
	c.agent, c.mtool = ae, mt
	return nil
}
