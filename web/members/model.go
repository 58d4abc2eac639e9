package members

import "github.com/warden-dev/warden/web/layout"

// Model is the members screen.
type Model struct {
	Page layout.Page
	// Rows are the tenant's members, ordered by e-mail.
	Rows []Row
	// Roles offered by the invite form.
	Roles []string
	// ChangeRoles are offered by a row's change-role form: the namespace
	// roles, and owner when the authorizer lets the caller grant it.
	ChangeRoles []string
	// Form echoes the invite form after a failed submit.
	FormEmail     string
	FormRole      string
	FormNamespace string
	// EmailError is tied to the e-mail field; Error and Notice go to the
	// form's live region.
	EmailError string
	Error      string
	Notice     string
	// CanManage shows the invite form and remove buttons.
	CanManage bool
}

// Row is one member in the table.
type Row struct {
	Email     string
	Name      string
	Role      string
	Status    string
	Joined    string
	LastLogin string
	// RemovePath is the POST target of the remove button ("" hides it).
	RemovePath string
	// RolePath is the POST target of the change-role form ("" hides it);
	// ID makes the form's element ids unique.
	RolePath string
	ID       string
}
