package apikeys

import "github.com/warden-dev/warden/web/layout"

// Model is the API keys screen.
type Model struct {
	Page layout.Page
	Rows []Row
	// Roles offered by the create form.
	Roles []string
	// Lifetimes offered by the create form's expiry select.
	Lifetimes []Lifetime
	CanManage bool
	// NewSecret is set only in the response to the create that made it;
	// it is never stored and never rendered again.
	NewSecret  string
	NewKeyName string
	// The create form after a failed submit.
	FormName      string
	FormNamespace string
	FormRole      string
	FormAgent     string
	FormExpires   string
	NameError     string
	AgentError    string
	Error         string
	Notice        string
}

// Row is one key in the table; it never carries the secret or its hash.
type Row struct {
	ID        string
	Name      string
	Namespace string
	Role      string
	// Agent is the agent the key is bound to; "" when none.
	Agent   string
	Created string
	// Expires and LastUsed are UTC times, or "never".
	Expires    string
	LastUsed   string
	Status     string
	RevokePath string
}
