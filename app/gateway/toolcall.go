package gateway

import (
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// ToolCall phases (DESIGN.md): Pending → [AwaitingApproval] → Running →
// Succeeded | Failed, or Denied, Cancelled, Expired.
const (
	PhasePending          = resource.ToolCallPending
	PhaseAwaitingApproval = resource.ToolCallAwaitingApproval
	PhaseRunning          = resource.ToolCallRunning
	PhaseSucceeded        = resource.ToolCallSucceeded
	PhaseFailed           = resource.ToolCallFailed
	PhaseDenied           = resource.ToolCallDenied
	PhaseCancelled        = resource.ToolCallCancelled
	PhaseExpired          = resource.ToolCallExpired
)

// Approval statuses, of spec.approval.status and of an Approval's
// status.status.
const (
	ApprovalNotRequired = resource.ApprovalNotRequired
	ApprovalPending     = resource.ApprovalPending
	ApprovalApproved    = resource.ApprovalApproved
	ApprovalDenied      = resource.ApprovalDenied
	ApprovalExpired     = resource.ApprovalExpired
	ApprovalOverridden  = resource.ApprovalOverridden
)

// Annotations the gateway sets on its records.
const (
	// AnnotationAOSExecution is the AOS executionId of a function tool's
	// call, so that steps/toolCallResult finds its record.
	AnnotationAOSExecution = "warden.dev/aos-execution-id"
	// AnnotationEnvironment is the environment the call ran in.
	AnnotationEnvironment = "warden.dev/environment"
	// AnnotationReplayOf names the call a replay repeats.
	AnnotationReplayOf = "warden.dev/replay-of"
	// AnnotationTraceID is the W3C trace id (32 lower-case hex digits) of
	// the trace the gateway made for the call's request: the console links
	// a call to its span waterfall through it. SPEC.md fixes the
	// ToolCall's fields, so it is an annotation, not a field.
	AnnotationTraceID = "warden.dev/trace-id"
	// AnnotationRequestedBy is, on an Approval, the audit subject of the
	// credential that requested it: neither it nor the agent may decide
	// it (authz.AuthorizeDecision).
	AnnotationRequestedBy = "warden.dev/requested-by"
)

// Finished reports whether a phase is terminal.
func Finished(phase string) bool { return resource.ToolCallFinished(phase) }

// releases reports whether a call that ends in phase frees its idempotency
// key for a retry.
func releases(phase string) bool {
	switch phase {
	case PhaseFailed, PhaseDenied, PhaseCancelled, PhaseExpired:
		return true
	}
	return false
}

// View is a typed read of a ToolCall record.
type View struct {
	Obj  *resource.Object
	Spec resource.ToolCallSpec
	// Status is the record's status.
	Status resource.ToolCallStatus
}

// viewOf decodes a ToolCall record.
func viewOf(o *resource.Object) (*View, error) {
	spec, err := resource.DecodeSpec[resource.ToolCallSpec](o)
	if err != nil {
		return nil, errorf("decode %s: %w", o.Key(), err)
	}
	st, err := resource.DecodeStatus[resource.ToolCallStatus](o)
	if err != nil {
		return nil, errorf("decode %s: %w", o.Key(), err)
	}
	return &View{Obj: o, Spec: spec, Status: st}, nil
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// newToolCall builds a ToolCall record.
func newToolCall(name, namespace, env, execution, agent, tool, class, key string, input map[string]any, approvalRequired bool, approvalStatus string) *resource.Object {
	if input == nil {
		input = map[string]any{}
	}
	return &resource.Object{
		APIVersion: resource.GroupVersion,
		Kind:       resource.KindToolCall,
		Metadata: resource.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{
				"warden.dev/agent": agent,
				"warden.dev/tool":  tool,
			},
			Annotations: map[string]string{AnnotationEnvironment: env},
		},
		Spec: map[string]any{
			"executionRef": map[string]any{"name": execution},
			"agentRef":     map[string]any{"name": agent},
			"toolRef":      map[string]any{"name": tool},
			"input":        input,
			"sideEffects":  map[string]any{"level": class, "idempotencyKey": key},
			"approval":     map[string]any{"required": approvalRequired, "status": approvalStatus},
		},
		Status: map[string]any{"phase": PhasePending},
	}
}

// errorOutput is status.output of a call that failed or was denied: the
// record has no other place for the reason (its fields are SPEC.md's).
func errorOutput(code, message string, details map[string]any) map[string]any {
	e := map[string]any{"code": code, "message": message}
	if len(details) > 0 {
		e["details"] = details
	}
	return map[string]any{"error": e}
}
