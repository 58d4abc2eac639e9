package gateway

import (
	"context"

	"github.com/warden-dev/warden/app/apierr"
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
	if !ok {
		err := apierr.New(apierr.CodeForbidden, "agent %q does not reference tool %q in its compiled manifest %s", ae.name, c.req.Tool, ae.manifest)
		c.g.auditRefusal(ctx, c.p, "toolcalls/create", "Tool/"+c.req.Tool, "", err)
		return err
	}
	c.agent, c.mtool = ae, mt
	return nil
}
