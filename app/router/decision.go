package router

import "time"

// Decision is one routing decision as recorded and explained: the
// candidates in the order the router considered them and what became of
// each. docs/router.md documents the fields.
type Decision struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Route is the name explained: the agent whose route was followed,
	// or the Model the caller named.
	Route string `json:"route"`
	// RouteKind is agent or model.
	RouteKind   string `json:"routeKind"`
	Agent       string `json:"agent,omitempty"`
	Caller      string `json:"caller"`
	Environment string `json:"environment,omitempty"`
	Execution   string `json:"execution,omitempty"`
	// Operation is chat or embeddings.
	Operation string `json:"operation"`
	Stream    bool   `json:"stream,omitempty"`
	// Needs is what the request needed of a model.
	Needs      Needs       `json:"needs"`
	Candidates []Candidate `json:"candidates"`
	// Selected is the Model that answered.
	Selected string `json:"selected,omitempty"`
	// Outcome is succeeded, failed (the provider failed, or the stream
	// broke), refused (no candidate could be called) or cancelled (the
	// caller went away).
	Outcome string       `json:"outcome"`
	Error   *errorRecord `json:"error,omitempty"`
	Usage   *Usage       `json:"usage,omitempty"`
	// Cost is the call's price in USD from the Model's spec.cost.
	Cost       float64  `json:"cost"`
	DurationMs float64  `json:"durationMs"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Candidate is one Model on the route and what became of it.
type Candidate struct {
	Model    string `json:"model,omitempty"`
	RouteID  string `json:"routeId"`
	Provider string `json:"provider,omitempty"`
	// Outcome is selected, skipped (not called: Reason says why), failed
	// (called; the provider failed) or notTried (an earlier one answered).
	Outcome string `json:"outcome"`
	// Reason is capability, policy, budget, unavailable or error.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Capability is the capability the Model lacked (toolUse, vision,
	// jsonMode, streaming, contextWindow, embeddings).
	Capability string `json:"capability,omitempty"`
	// Policy is the denying policy {policyId, policyVersion, rule}.
	Policy map[string]any `json:"policy,omitempty"`
	// Limit is the exhausted budget.
	Limit map[string]any `json:"limit,omitempty"`
	// Status is the provider's HTTP status (0 when unreachable).
	Status    int     `json:"status,omitempty"`
	LatencyMs float64 `json:"latencyMs,omitempty"`
}

// errorRecord is the error the caller received.
type errorRecord struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Candidate outcomes and skip reasons.
const (
	outcomeSelected = "selected"
	outcomeSkipped  = "skipped"
	outcomeFailed   = "failed"
	outcomeNotTried = "notTried"

	reasonCapability  = "capability"
	reasonPolicy      = "policy"
	reasonBudget      = "budget"
	reasonUnavailable = "unavailable"
	reasonError       = "error"
)
