package gateway

import (
	"context"
	"fmt"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
)

// classify is step 3: the side-effect class and whether the call needs a
// human approval. The class is the Tool record's spec.sideEffect (the
// operator's classification). Approval starts from the class default
// (financial, communication, privileged), which the Tool record's
// requiresApproval overrides, which the agent's own tool entry overrides
// (both compiled into the manifest); a policy rule with action
// require_approval (step 4) can still demand it.
func (c *call) classify(ctx context.Context) error {
	spec := &c.tool.spec
	c.class = spec.SideEffect
	if c.class == "" {
		c.class = c.mtool.SideEffect
	}
	c.approvalRequired = c.mtool.RequiresApproval
	if c.approvalRequired {
		c.approvalReason = fmt.Sprintf("tool %s (%s) requires approval", c.req.Tool, c.class)
	}
	switch spec.Source {
	case resource.ToolSourceFunction:
		if !c.req.hook {
			return apierr.New(apierr.CodeInvalidRequest,
				"tool %q is a function tool: it runs in the agent's process, which reports it through POST /v1/hooks/aos (steps/toolCallRequest and steps/toolCallResult)", c.req.Tool)
		}
	default:
		if c.req.hook {
			return apierr.New(apierr.CodeInvalidRequest,
				"tool %q has source %s: the gateway runs it, call POST /v1/tool-calls instead of reporting it through the hook", c.req.Tool, spec.Source)
		}
	}
	input := c.req.Input
	if input == nil {
		input = map[string]any{}
	}
	if c.tool.input != nil {
		if err := c.tool.input.Validate(input); err != nil {
			return apierr.New(apierr.CodeInvalidRequest, "input does not match the input schema of tool %q: %s", c.req.Tool, schemaMessage(err)).
				WithDetails(map[string]any{"tool": c.req.Tool})
		}
	}
	c.input = input
	key, err := IdempotencyKey(c.p.Agent, c.req.Tool, input)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "input cannot be canonicalized: %s", err)
	}
	if c.req.IdempotencyKey != "" {
		key = "caller:" + c.req.IdempotencyKey
	}
	c.key = key
	return nil
}
