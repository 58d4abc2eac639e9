package signup

import "github.com/warden-dev/warden/web/layout"

// Model is the sign-up screen.
type Model struct {
	Page layout.Page
	// The form as submitted.
	Organization string
	Tenant       string
	Name         string
	// Field errors, each tied to its field by aria-describedby.
	OrganizationError string
	TenantError       string
	NameError         string
	// Error is a form-level error (e.g. the tenant id is taken).
	Error string
}

// HasErrors reports whether any field or the form has an error.
func (m Model) HasErrors() bool {
	return m.OrganizationError != "" || m.TenantError != "" || m.NameError != "" || m.Error != ""
}
