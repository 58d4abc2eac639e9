package gateway

import (
	"context"

	"github.com/warden-dev/warden/app/apierr"
)

// resolve is step 1: the Tool record by name, in the caller's namespace.
// An unknown tool is refused with NotFound and recorded in the audit log.
func (c *call) resolve(ctx context.Context) error {
	if c.req.MCP != nil {
		if err := c.resolveMCP(); err != nil {
			c.g.auditRefusal(ctx, c.p, "toolcalls/create", "MCPServer/"+c.req.MCP.Server, "", err)
			return err
		}
	}
	if c.req.Tool == "" {
		return apierr.New(apierr.CodeInvalidRequest, "tool is required: the body is {\"tool\": \"<system>.<action>\", \"input\": {…}}")
	}
	te, ok := c.snap.tools[nsName{c.p.Namespace, c.req.Tool}]
	if !ok {
		err := apierr.New(apierr.CodeNotFound, "tool %q is not defined in namespace %q", c.req.Tool, c.p.Namespace)
		c.g.auditRefusal(ctx, c.p, "toolcalls/create", "Tool/"+c.req.Tool, "", err)
		return err
	}
	if te.broken != "" {
		return apierr.New(apierr.CodeUnavailable, "tool %q cannot be called: %s", c.req.Tool, te.broken)
	}
	c.tool = te
	if err := c.mcpRefusal(); err != nil {
		c.g.auditRefusal(ctx, c.p, "toolcalls/create", "Tool/"+c.req.Tool, "", err)
		return err
	}
	return nil
}
