package aos

import (
	"encoding/json"
	"fmt"
)

// Verdict is what a decision says about the step.
type Verdict string

// The verdicts of AOS 0.1.0.
const (
	Allow  Verdict = "allow"
	Deny   Verdict = "deny"
	Modify Verdict = "modify"
)

// Decision is the result of a step (the schema's ASOPSuccessResult).
type Decision struct {
	// Decision is allow, deny or modify.
	Decision Verdict `json:"decision"`
	// Message explains the decision to a person; the schema requires the
	// member, an empty string included.
	Message string `json:"message"`
	// Reasoning is the decider's reasoning.
	Reasoning string `json:"reasoning,omitempty"`
	// ReasonCode lists machine-readable reasons (an array in the schema).
	ReasonCode []string `json:"reasonCode,omitempty"`
	// Data is additional data; the schema requires an object.
	Data map[string]any `json:"data,omitempty"`
	// ModifiedRequest is the whole request to run instead, with modify
	// only. It must be the same method as the request it answers.
	ModifiedRequest *Request `json:"modifiedRequest,omitempty"`
}

// check enforces what the schema cannot say about a decision answering
// method. The schema itself is checked on the encoded response.
func (d Decision) check(method string) error {
	switch d.Decision {
	case Allow, Deny:
		if d.ModifiedRequest != nil {
			return fmt.Errorf("%w: %s carries a modifiedRequest; only modify may", ErrInvalidDecision, d.Decision)
		}
	case Modify:
		if d.ModifiedRequest == nil {
			return fmt.Errorf("%w: modify without modifiedRequest", ErrInvalidDecision)
		}
		if d.ModifiedRequest.Method != method {
			return fmt.Errorf("%w: modifiedRequest is %q, the request is %q", ErrInvalidDecision, d.ModifiedRequest.Method, method)
		}
	default:
		return fmt.Errorf("%w: unknown decision %q", ErrInvalidDecision, d.Decision)
	}
	return nil
}

// decisionFrom reads a Decision out of a result value the schema has
// accepted, by exact member names (see the note in step.go).
func decisionFrom(m map[string]any) (Decision, error) {
	d := Decision{
		Decision:  Verdict(str(m, "decision")),
		Message:   str(m, "message"),
		Reasoning: str(m, "reasoning"),
		Data:      obj(m, "data"),
	}
	for _, rc := range arr(m, "reasonCode") {
		s, _ := rc.(string)
		d.ReasonCode = append(d.ReasonCode, s)
	}
	if mr := obj(m, "modifiedRequest"); mr != nil {
		r, err := requestFrom(mr)
		if err != nil {
			return Decision{}, fmt.Errorf("%w: modifiedRequest: %w", ErrInvalidDecision, err)
		}
		d.ModifiedRequest = r
	}
	return d, nil
}

// idEqual reports whether two id values (string or json.Number) are the
// same id: equal strings, or numbers of equal value (7 and 7.0).
func idEqual(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		ra, okA := ratOf(a)
		rb, okB := ratOf(b)
		return okA && okB && ra.Cmp(rb) == 0
	}
	return false
}
