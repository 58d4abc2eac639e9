package tenants

import "github.com/warden-dev/warden/web/layout"

// Choice is what the sign-in found for a person in several tenants; the
// integrator fills it from app/oidc's TenantChoice.
type Choice struct {
	Email string
	// Action is where each tenant's form posts; TokenField and Token are
	// the hidden field that binds the form to this browser's sign-in.
	Action     string
	TokenField string
	Token      string
	Tenants    []Option
}

// Option is one tenant a person may choose.
type Option struct {
	ID   string
	Name string
}

// ChooseModel is the choose-a-tenant page.
type ChooseModel struct {
	Page       layout.Page
	Email      string
	Action     string
	TokenField string
	Token      string
	Tenants    []Option
}

// ListModel is the /tenants page: the person's tenants, the current one
// marked, a switch form for each other one.
type ListModel struct {
	Page       layout.Page
	SwitchPath string
	Rows       []Row
}

// Row is one tenant of the /tenants page.
type Row struct {
	ID      string
	Name    string
	Current bool
}
