package gateway

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Trace event names, SPEC.md's hooks.
const (
	TraceToolCallRequest = "toolCallRequest"
	TraceToolCallResult  = "toolCallResult"
)

// emitRequest is step 6: the trace event toolCallRequest on the call's
// trace, before the tool runs. Its attributes name the call, never its
// arguments.
func (c *call) emitRequest(ctx context.Context) error {
	c.span.AddEvent(TraceToolCallRequest, trace.WithAttributes(
		attribute.String("warden.toolcall", c.name),
		attribute.String("warden.tool", c.req.Tool),
		attribute.String("warden.side_effect", c.class),
		attribute.String("warden.idempotency_key", c.key),
		attribute.Bool("warden.approval_required", c.approvalRequired),
		attribute.String("warden.decision", c.decision.Action),
		attribute.String("warden.policy", c.decision.Ref()),
	))
	return nil
}
