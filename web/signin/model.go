package signin

import "github.com/warden-dev/warden/web/layout"

// Model is the sign-in screen.
type Model struct {
	Page layout.Page
	// Tenant is the tenant named by ?tenant=, if any.
	Tenant string
	// Welcome greets a tenant that was just created.
	Welcome bool
	// SSO holds the tenant's own identity provider buttons.
	SSO []Button
	// Providers are the deployment-wide sign-in buttons.
	Providers []Button
	// Error explains a failed sign-in (from ?error=).
	Error string
	// LocalMode says no people sign-in is configured: the page explains
	// API keys and the CLI instead of offering buttons.
	LocalMode bool
	// SignupEnabled shows the link to create a tenant.
	SignupEnabled bool
}

// Button is one sign-in link.
type Button struct {
	Label string
	Href  string
}
