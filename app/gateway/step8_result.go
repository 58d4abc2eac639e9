package gateway

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/apierr"
)

// checkResult is step 8: the result as the tool returned it is checked
// against the Tool's output schema (a result that does not match fails the
// call: an agent must not act on data the tool does not promise), and the
// trace event toolCallResult is emitted. The record is written once, after
// step 9, so that it holds exactly what the agent received: a result that
// redaction changed is never stored raw.
func (c *call) checkResult(ctx context.Context, res *result) error {
	if res.failure == nil && c.tool.output != nil {
		if err := c.tool.output.Validate(res.output); err != nil {
			res.failure = apierr.New(apierr.CodeToolFailed, "the result of tool %q does not match its output schema: %s", c.req.Tool, schemaMessage(err))
			res.output = nil
		}
	}
	phase := PhaseSucceeded
	if res.failure != nil {
		phase = PhaseFailed
	}
	c.span.AddEvent(TraceToolCallResult, trace.WithAttributes(
		attribute.String("warden.toolcall", c.name),
		attribute.String("warden.tool", c.req.Tool),
		attribute.String("warden.phase", phase),
	))
	return nil
}
