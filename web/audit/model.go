package audit

import "github.com/warden-dev/warden/web/layout"

// Model is the audit log screen.
type Model struct {
	Page layout.Page
	// Filters as submitted.
	Actor     string
	Verb      string
	Namespace string
	// Verbs offered by the verb filter.
	Verbs []string
	Rows  []Row
	// NextPath is the link to the next page ("" on the last page); FirstPath
	// goes back to the start with the same filters ("" on the first page).
	NextPath  string
	FirstPath string
	Error     string
}

// Row is one audit record.
type Row struct {
	Seq       int64
	Time      string
	Actor     string
	Verb      string
	Namespace string
	Resource  string
	Outcome   string
	Policy    string
	Reason    string
}
