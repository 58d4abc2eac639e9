package web

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/web/apikeys"
	"github.com/warden-dev/warden/web/approvals"
	"github.com/warden-dev/warden/web/audit"
	"github.com/warden-dev/warden/web/fleet"
	"github.com/warden-dev/warden/web/layout"
	"github.com/warden-dev/warden/web/members"
	"github.com/warden-dev/warden/web/namespaces"
	"github.com/warden-dev/warden/web/signin"
	"github.com/warden-dev/warden/web/signup"
	"github.com/warden-dev/warden/web/static"
	"github.com/warden-dev/warden/web/tenants"
	"github.com/warden-dev/warden/web/toolcalls"
	"github.com/warden-dev/warden/web/traces"
)

// Deps is what the console needs from the rest of Warden. The integrator
// fills it with tenants/, app/oidc, app/authz and the store.
type Deps struct {
	// Principal returns the signed-in person of the request (app/oidc's
	// session), false when there is none.
	Principal func(c *fiber.Ctx) (auth.Principal, bool)
	// CSRFToken returns the token the CSRF middleware expects for this
	// request (app/oidc's CSRFToken).
	CSRFToken func(c *fiber.Ctx) string
	// CSRFField is the form field carrying the token (default "csrf_token",
	// as app/oidc reads it);
	// CSRFHeader the header htmx sends it in (default "X-CSRF-Token").
	CSRFField  string
	CSRFHeader string

	// Issuers are the deployment-wide sign-in buttons; TenantSSO (optional)
	// adds a tenant's own identity providers when ?tenant= is given.
	Issuers   []signin.Issuer
	TenantSSO signin.TenantSSO
	// LoginPath starts the OIDC code flow (default "/auth/login", taking
	// ?issuer= and ?tenant=); LogoutPath ends the session (default
	// "/auth/logout", POST with the CSRF token); SwitchTenantPath (default
	// "/auth/switch", POST tenant=) changes the session's tenant.
	LoginPath        string
	LogoutPath       string
	SwitchTenantPath string

	// Signup (optional) is self-service sign-up; nil disables it: /signup
	// answers 404 and sign-in offers no link to it.
	Signup signup.Service
	// LocalMode means no identity provider is configured: sign-in explains
	// API keys and the CLI instead of offering buttons.
	LocalMode  bool
	Members    members.Service
	Namespaces namespaces.Service
	APIKeys    apikeys.Service
	Audit      audit.Service
	// Traces serves the trace screens; nil leaves them out.
	Traces traces.Service
	// Tenants (optional) lists a person's tenants for the header's
	// switcher and the /tenants page.
	Tenants layout.TenantLister
	// Approvals, ToolCalls and Fleet (optional) are the approver's
	// inbox and approval page, the tool-call explorer and the fleet
	// pages; nil leaves a screen out.
	Approvals approvals.Service
	ToolCalls toolcalls.Service
	Fleet     fleet.Service
	// WatchApprovals (optional) signals changes of a tenant's Approvals
	// (the watch hub): with it the inbox follows GET /approvals/stream;
	// StreamBase ends those streams when the server shuts down.
	WatchApprovals approvals.Watcher
	StreamBase     context.Context
	// Menu (optional) says which menu entries a person may use.
	Menu func(ctx context.Context, p auth.Principal) map[string]bool
	// SignupLimiter (optional) limits sign-ups per client IP; a client
	// over its limit gets the sign-up page with 429 Too Many Requests.
	SignupLimiter Limiter
	// SignupFormAction are the origins (scheme://host[:port]) of the
	// identity providers the sign-up form's post redirects to; its page
	// allows them as form-action.
	SignupFormAction []string
	// SecureCookies marks the console's own cookies Secure even when the
	// request arrived in plaintext (TLS terminated in front of Warden).
	SecureCookies bool

	// Authorize is app/authz's decision; the screens ask it what to offer
	// (invite, create, manage). nil offers nothing.
	Authorize func(ctx context.Context, p auth.Principal, verb, namespace, object string) error

	Log *slog.Logger
	Now func() time.Time
}

// Limiter is a rate limiter keyed by client (app/oidc's Limiter).
type Limiter interface {
	// Allow takes one token from key's bucket; when there is none,
	// retryAfter says when the next one comes.
	Allow(key string) (ok bool, retryAfter time.Duration)
}

// WithDefaults fills the optional fields.
func (d Deps) WithDefaults() Deps {
	if d.CSRFField == "" {
		d.CSRFField = "csrf_token"
	}
	if d.CSRFHeader == "" {
		d.CSRFHeader = "X-CSRF-Token"
	}
	if d.LoginPath == "" {
		d.LoginPath = "/auth/login"
	}
	if d.LogoutPath == "" {
		d.LogoutPath = "/auth/logout"
	}
	if d.SwitchTenantPath == "" {
		d.SwitchTenantPath = "/auth/switch"
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// Validate names every required dependency that is missing.
func (d Deps) Validate() error {
	var errs []error
	for name, missing := range map[string]bool{
		"Principal": d.Principal == nil, "CSRFToken": d.CSRFToken == nil,
		"Members": d.Members == nil, "Namespaces": d.Namespaces == nil, "APIKeys": d.APIKeys == nil, "Audit": d.Audit == nil,
	} {
		if missing {
			errs = append(errs, errors.New("web.Deps."+name+" is required"))
		}
	}
	return errors.Join(errs...)
}

// Console is the web console's set of screens.
type Console struct {
	deps       Deps
	assets     *static.Assets
	signup     *signup.Handler
	signin     *signin.Handler
	members    *members.Handler
	namespaces *namespaces.Handler
	apikeys    *apikeys.Handler
	audit      *audit.Handler
	approvals  *approvals.Handler
	stream     *approvals.Streamer
	toolcalls  *toolcalls.Handler
	fleet      *fleet.Handler
	env        *layout.Env
	traces     *traces.Handler
	tenants    *tenants.Handler
}

// New builds the console.
func New(deps Deps) (*Console, error) {
	deps = deps.WithDefaults()
	if err := deps.Validate(); err != nil {
		return nil, err
	}
	assets := static.New()
	cs := &Console{deps: deps, assets: assets}
	env := &layout.Env{
		Principal: deps.Principal, CSRFToken: cs.csrfToken, CSRFField: deps.CSRFField, CSRFHeader: deps.CSRFHeader,
		Tenants: deps.Tenants, SwitchTenantPath: deps.SwitchTenantPath,
		StyleURL: assets.URL("style.css"), ScriptURL: assets.URL("htmx.min.js"), Log: deps.Log, Menu: deps.Menu,
		Authorize: deps.Authorize,
	}
	var limit func(*fiber.Ctx) (bool, time.Duration)
	if deps.SignupLimiter != nil {
		limit = func(c *fiber.Ctx) (bool, time.Duration) { return deps.SignupLimiter.Allow(c.IP()) }
	}
	*cs = Console{
		deps:   deps,
		assets: assets,
		signup: &signup.Handler{Env: env, Service: deps.Signup, Limit: limit, CSP: FormActionPolicy(deps.SignupFormAction)},
		signin: &signin.Handler{Env: env, Issuers: deps.Issuers, TenantSSO: deps.TenantSSO, LoginPath: deps.LoginPath,
			LocalMode: deps.LocalMode, SignupEnabled: deps.Signup != nil},
		members:    &members.Handler{Env: env, Service: deps.Members},
		namespaces: &namespaces.Handler{Env: env, Service: deps.Namespaces},
		apikeys:    &apikeys.Handler{Env: env, Service: deps.APIKeys, Now: deps.Now},
		audit:      &audit.Handler{Env: env, Service: deps.Audit},
		approvals:  &approvals.Handler{Env: env, Service: deps.Approvals, Now: deps.Now},
		toolcalls:  &toolcalls.Handler{Env: env, Service: deps.ToolCalls},
		fleet:      &fleet.Handler{Env: env, Service: deps.Fleet},
		tenants:    &tenants.Handler{Env: env},
		env:        env,
	}
	if deps.Traces != nil {
		cs.traces = &traces.Handler{Env: env, Service: deps.Traces}
	}
	if deps.WatchApprovals != nil {
		cs.approvals.StreamURL, cs.approvals.ScriptURL = "/approvals/stream", assets.URL("inbox.js")
		cs.stream = &approvals.Streamer{Handler: cs.approvals, Watch: deps.WatchApprovals, Base: deps.StreamBase, Log: deps.Log}
	}
	return cs, nil
}

// Register mounts the console on r. Every route gets SecurityHeaders;
// screens behind sign-in redirect to /signin without a session. The CSRF
// check is not done here: mount app/oidc's CSRF middleware in front of the
// console (it sees the hidden field and the htmx header).
func (cs *Console) Register(r fiber.Router) {
	sh := SecurityHeaders
	r.Get(static.Prefix+"*", sh, cs.assets.Handler)

	r.Get("/", sh, cs.root)
	if cs.deps.Signup != nil {
		// Anonymous, so guarded on its own: same origin, a double-submit
		// form token and a per-client rate limit (in the handler).
		r.Get("/signup", sh, cs.issueFormToken, cs.signup.Get)
		r.Post("/signup", sh, SameOrigin, cs.checkFormToken, cs.signup.Post)
	} else {
		r.All("/signup", sh, signupDisabled)
	}
	r.Get("/signin", sh, cs.signin.Get)
	r.Post("/signout", sh, cs.signout)

	in := cs.requireUser
	r.Get("/members", sh, in, cs.members.Get)
	r.Post("/members/invite", sh, in, cs.members.Invite)
	r.Post("/members/:email/remove", sh, in, cs.members.Remove)
	r.Post("/members/:email/role", sh, in, cs.members.SetRole)
	r.Get("/namespaces", sh, in, cs.namespaces.Get)
	r.Post("/namespaces", sh, in, cs.namespaces.Create)
	r.Get("/apikeys", sh, in, cs.apikeys.Get)
	r.Post("/apikeys", sh, in, cs.apikeys.Create)
	r.Post("/apikeys/:id/revoke", sh, in, cs.apikeys.Revoke)
	r.Get("/audit", sh, in, cs.audit.Get)
	r.Get("/tenants", sh, in, cs.pageErrors, cs.tenants.List)
	if cs.traces != nil {
		r.Get("/traces", sh, in, cs.traces.Overview)
		r.Get("/traces/open", sh, in, cs.traces.Open)
		r.Get("/traces/:id", sh, in, cs.traces.Trace)
	}
	cs.registerScreens(r)
}

// RenderTenantChoice renders the choose-a-tenant page of a sign-in that
// found several tenants (app/oidc's RenderChoice); its forms carry the
// choice's token and, when the browser has a session, its CSRF token.
func (cs *Console) RenderTenantChoice(c *fiber.Ctx, ch tenants.Choice) error {
	return cs.tenants.Choose(c, ch)
}

// signupDisabled answers 404 where self-service sign-up is off (local mode,
// or a deployment whose operator creates tenants).
func signupDisabled(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusNotFound).SendString("Sign-up is disabled on this Warden: ask its operator for an invitation.\n")
}

func (cs *Console) root(c *fiber.Ctx) error {
	if p, ok := cs.deps.Principal(c); ok {
		return c.Redirect(cs.landing(c, p), fiber.StatusSeeOther)
	}
	return c.Redirect("/signin", fiber.StatusSeeOther)
}

// signout hands the sign-out form to the OIDC handler; 307 keeps the POST
// and its CSRF field.
func (cs *Console) signout(c *fiber.Ctx) error {
	return c.Redirect(cs.deps.LogoutPath, fiber.StatusTemporaryRedirect)
}

// requireUser sends requests without a session to sign-in (htmx requests
// through HX-Redirect, so the whole page changes, not a fragment).
func (cs *Console) requireUser(c *fiber.Ctx) error {
	if _, ok := cs.deps.Principal(c); ok {
		return c.Next()
	}
	if layout.IsHTMX(c) {
		c.Set("HX-Redirect", "/signin?error=expired")
		return c.SendStatus(fiber.StatusUnauthorized)
	}
	return c.Redirect("/signin", fiber.StatusSeeOther)
}
