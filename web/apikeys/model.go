package apikeys

import "github.com/warden-dev/warden/web/layout"

// Model is the API keys screen.
type Model struct {
	Page layout.Page
	Rows []Row
	// Roles offered by the create form.
	Roles     []string
	CanManage bool
	// NewSecret is set only in the response to the create that made it;
	// it is never stored and never rendered again.
	NewSecret  string
	NewKeyName string
	// The create form after a failed submit.
	FormName      string
	FormNamespace string
	FormRole      string
	NameError     string
	Error         string
	Notice        string
}

// Row is one key in the table; it never carries the secret or its hash.
type Row struct {
	ID         string
	Name       string
	Namespace  string
	Role       string
	Created    string
	Expires    string
	Status     string
	RevokePath string
}
