package approvals

import "github.com/warden-dev/warden/web/layout"

// Detail is what a person needs to decide an approval, and its outcome
// once decided.
type Detail struct {
	Namespace  string
	Name       string
	Agent      string
	Tool       string
	SideEffect string
	Reason     string
	// Policy and Rule asked for approval (empty when the side-effect
	// class or the tool did).
	Policy string
	Rule   string
	// Input is the call's input as its record holds it, indented JSON.
	Input     string
	ExpiresAt string
	// TimeLeft is "23 min", "expired".
	TimeLeft string
	ToolCall string
	// Status is pending, approved, denied, expired or overridden.
	Status    string
	DecidedBy string
	DecidedAt string
	Rationale string
	Channel   string
	// Phase is the call's phase.
	Phase string
}

// Pending reports whether the approval still waits for a decision.
func (d Detail) Pending() bool { return d.Status == "pending" }

// LinkPage is the page an e-mail link opens.
type LinkPage struct {
	Page   layout.Page
	Detail Detail
	// Token is the link's token, posted back with the decision.
	Token     string
	Recipient string
	// Notice is the outcome of a decision just made; Error why one was
	// refused.
	Notice string
	Error  string
}

// Problem is an error page in the console's style.
type Problem struct {
	Page    layout.Page
	Status  int
	Heading string
	Message string
}
