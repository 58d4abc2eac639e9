package api

// Decisions of an approver.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// DecideRequest is the body of POST …/approvals/{id}/decide and
// /v1/approvals/{id}/override.
type DecideRequest struct {
	// Decision is DecisionApprove or DecisionDeny.
	Decision string `json:"decision"`
	// Rationale is the decider's reason; an override needs one.
	Rationale string `json:"rationale,omitempty"`
	// Channel is where the decision arrived (api, console, email,
	// webhook, slack; api when empty). The receiving server sets it; it
	// is never read from a body. It is recorded in the approval's status
	// and in the audit record.
	Channel string `json:"-"`
}
