package gateway

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
)

// CallRequest is the body of POST /v1/tool-calls.
type CallRequest struct {
	// Tool is the tool's name, "<system>.<action>".
	Tool string `json:"tool"`
	// Input is the tool's arguments.
	Input map[string]any `json:"input"`
	// Execution names the Execution the call belongs to.
	Execution string `json:"execution,omitempty"`
	// Force re-executes a call that idempotency would deduplicate, where
	// policy allows it.
	Force bool `json:"force,omitempty"`
	// Wait is how long to wait for a call that needs approval, or for an
	// identical call in flight, before answering with the record as it
	// stands (Go duration; default 0 for approvals, 30s for duplicates).
	Wait string `json:"wait,omitempty"`

	// IdempotencyKey is the Idempotency-Key header; empty derives the key.
	IdempotencyKey string `json:"-"`
	// MCP names the tool by its MCP server and its name there (calls
	// through the MCP gateway); Tool is then filled in by step 1.
	MCP *MCPTarget `json:"-"`
	// aosExecution is the AOS executionId of a function tool's call.
	aosExecution string
	// replayOf names the call a replay repeats.
	replayOf string
	// hook is true for steps/toolCallRequest: the tool runs in the agent.
	hook bool
}

// Outcome is the answer to a call.
type Outcome struct {
	// Call is the ToolCall record.
	Call *resource.Object
	// Replayed is true when the call was deduplicated: Call is an earlier
	// call with the same idempotency key.
	Replayed bool
	// Warnings are soft-cap breaches, for the Warning header.
	Warnings []string
	// Modified is true when policy or a guardian changed the input.
	Modified bool
}

// Phase returns the call's phase.
func (o *Outcome) Phase() string {
	p, _ := o.Call.Status["phase"].(string)
	return p
}

// call is the state of one call as it moves through the steps.
type call struct {
	g    *Gateway
	p    auth.Principal
	req  CallRequest
	now  time.Time
	span trace.Span
	// mark counts the call among those in flight (recorder).
	mark mark

	snap  *snapshot
	tool  *toolEntry
	agent *agentEntry
	mtool resource.ManifestTool

	class            string
	approvalRequired bool
	approvalReason   string

	input    map[string]any
	key      string
	settings policy.Settings
	// decision is the deciding policy decision at toolCallRequest.
	decision policy.Decision
	modified bool
	denial   *apierr.Error

	// name and obj are the record.
	name     string
	obj      *resource.Object
	replayed bool
	warnings []string
	// deferred is set when the record is written once, with the result
	// (recordsWithResult); obj is nil until then.
	deferred bool
	// steps times the steps, for status.steps.
	steps stepTimes
}

// Call runs a tool call through the nine steps for the agent p.
func (g *Gateway) Call(ctx context.Context, p auth.Principal, req CallRequest) (*Outcome, error) {
	ctx, span := g.tracer.Start(ctx, "warden.toolcall", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("warden.tool", req.Tool), attribute.String("warden.agent", p.Agent),
			attribute.String("warden.namespace", p.Namespace), attribute.String("warden.environment", p.Environment),
			attribute.String("warden.tenant", p.Tenant)))
	defer span.End()
	c := &call{g: g, p: p, req: req, now: g.now().UTC(), span: span, mark: g.rec.mark(p.Tenant)}
	defer c.mark.set(false)
	out, err := c.run(ctx)
	if err != nil {
		span.SetStatus(codes.Error, errorCode(err))
	} else {
		span.SetAttributes(attribute.String("warden.toolcall", out.Call.Metadata.Name), attribute.String("warden.phase", out.Phase()))
	}
	return out, err
}

// step runs one step in a span of its own.
func (c *call) step(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	ctx, span := c.g.tracer.Start(ctx, name)
	defer span.End()
	if err := fn(ctx); err != nil {
		span.SetStatus(codes.Error, errorCode(err))
		return err
	}
	return nil
}

// timed runs step i in its span and times it from the previous lap.
func (c *call) timed(ctx context.Context, i int, fn func(ctx context.Context) error) error {
	err := c.step(ctx, stepNames[i], fn)
	c.steps.lap(i)
	return err
}

func errorCode(err error) string {
	if e, ok := apierr.As(err); ok {
		return e.Code
	}
	return apierr.CodeInternal
}

func (c *call) run(ctx context.Context) (*Outcome, error) {
	if err := c.g.requireAgent(c.p); err != nil {
		return nil, err
	}
	ctx = authz.EnsureTrail(ctx)
	if err := c.g.cfg.Authz.Authorize(ctx, c.p, authz.VerbCreate, c.p.Namespace, authz.ObjToolCalls); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			return nil, apierr.New(apierr.CodeForbidden, "%s may not call tools in namespace %q", c.p.Subject, c.p.Namespace)
		}
		return nil, err
	}
	snap, err := c.g.catalog.get(ctx, c.p.Tenant)
	if err != nil {
		return nil, err
	}
	c.snap = snap
	c.steps.begin()
	for i, fn := range [...]func(context.Context) error{c.resolve, c.authenticate, c.classify, c.evaluate, c.record} {
		if err := c.timed(ctx, i, fn); err != nil {
			return nil, err
		}
	}
	if c.denial != nil {
		return c.outcome(), c.denial
	}
	if c.replayed {
		c.mark.set(false)
		return c.g.replayed(ctx, c)
	}
	if err := c.timed(ctx, stepTrace, c.emitRequest); err != nil {
		return nil, err
	}
	if c.phase() == PhaseAwaitingApproval {
		c.mark.set(false)
		return c.g.awaitApproval(ctx, c)
	}
	if c.req.hook {
		// A function tool runs in the agent's own process: steps 7 to 9
		// happen when the agent reports steps/toolCallResult.
		return c.outcome(), nil
	}
	return c.g.execute(ctx, c)
}

func (c *call) phase() string {
	if c.obj == nil {
		return ""
	}
	p, _ := c.obj.Status["phase"].(string)
	return p
}

func (c *call) outcome() *Outcome {
	return &Outcome{Call: c.obj, Replayed: c.replayed, Warnings: c.warnings, Modified: c.modified}
}

// requireAgent refuses callers that are not an agent's workload identity.
func (g *Gateway) requireAgent(p auth.Principal) error {
	if p.Agent == "" || p.Namespace == "" || p.Namespace == auth.AllNamespaces {
		return apierr.New(apierr.CodeForbidden,
			"tool calls are made by agents: exchange the agent's credential for a workload token (POST /v1/auth/token or `warden token --agent NAME`)")
	}
	if p.Environment == "" {
		return apierr.New(apierr.CodeForbidden, "the credential of agent %q names no environment: ask for a workload token with an environment", p.Agent)
	}
	return nil
}
