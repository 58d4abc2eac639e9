package layout

import "strconv"

// Page is the view model of the frame around every console screen.
type Page struct {
	// Title names the screen; the document title adds " · Warden".
	Title string
	// Active is the nav key of the current screen ("members", …), which
	// gets aria-current="page".
	Active string
	// SignedIn shows the navigation and the account menu.
	SignedIn bool
	// UserEmail is the signed-in person, shown beside sign-out.
	UserEmail string
	// Tenant is the current tenant id.
	Tenant string
	// Tenants lists the tenants the person may switch to; the switcher is
	// shown when there is more than one and SwitchTenantPath is set.
	Tenants          []TenantOption
	SwitchTenantPath string
	// CSRFField and CSRFToken go into every form as a hidden field.
	CSRFField string
	CSRFToken string
	// HXHeaders is the JSON of hx-headers on <body>, carrying the CSRF token
	// on every htmx request.
	HXHeaders string
	// StyleURL and ScriptURL are the content-hashed asset URLs.
	StyleURL  string
	ScriptURL string
	// Nav is the navigation the person may use (Env.Menu filters Nav).
	Nav []NavItem
}

// TenantOption is one entry of the tenant switcher.
type TenantOption struct {
	ID      string
	Name    string
	Current bool
}

// NavItem is one link of the main navigation.
type NavItem struct {
	Key   string
	Label string
	Href  string
}

// Nav is the console's main navigation, in order.
var Nav = []NavItem{
	{Key: "approvals", Label: "Approvals", Href: "/approvals"},
	{Key: "toolcalls", Label: "Tool calls", Href: "/toolcalls"},
	{Key: "fleet", Label: "Fleet", Href: "/fleet"},
	{Key: "members", Label: "Members", Href: "/members"},
	{Key: "namespaces", Label: "Namespaces", Href: "/namespaces"},
	{Key: "apikeys", Label: "API keys", Href: "/apikeys"},
	{Key: "audit", Label: "Audit", Href: "/audit"},
	{Key: "traces", Label: "Traces", Href: "/traces"},
}

// Count writes "1 key", "3 keys".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
