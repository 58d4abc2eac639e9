package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
	"github.com/warden-dev/warden/web"
	"github.com/warden-dev/warden/web/apikeys"
	"github.com/warden-dev/warden/web/members"
	"github.com/warden-dev/warden/web/namespaces"
	"github.com/warden-dev/warden/web/signin"
	"github.com/warden-dev/warden/web/signup"
	webtenants "github.com/warden-dev/warden/web/tenants"
)

// newPeopleSignIn builds the OIDC handler when cfg.OIDC is set; nil means
// no people sign-in (local mode without issuers).
func newPeopleSignIn(cfg Config) (*oidc.Handler, error) {
	if cfg.OIDC == nil && cfg.LocalSignIn {
		return newLocalSignIn(cfg)
	}
	if cfg.OIDC == nil {
		return nil, nil
	}
	h, err := oidc.New(*cfg.OIDC, cfg.Store, cfg.Now, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("people sign-in (OIDC): %w", err)
	}
	return h, nil
}

// buildConsole wires the web console to the store, tenants/, app/oidc and
// the Authorizer.
func (s *Server) buildConsole() error {
	svc := tenants.New(s.store, s.authz, s.now, s.log)
	if s.cfg.Inviter != nil {
		svc = svc.WithInviter(s.cfg.Inviter)
	}
	s.tenants = svc
	deps := web.Deps{
		Principal:  s.consolePrincipal,
		CSRFToken:  oidc.CSRFToken,
		CSRFField:  oidc.CSRFField,
		CSRFHeader: oidc.CSRFHeader,
		LocalMode:  s.cfg.OIDC == nil,
		Members:    consoleMembers{s: s, svc: svc},
		Namespaces: consoleNamespaces{s: s, svc: svc},
		APIKeys:    consoleAPIKeys{s: s},
		Audit:      consoleAudit{s: s},
		Approvals:  consoleScreens{s: s},
		// The inbox follows Approval changes from the watch hub.
		WatchApprovals: s.watchApprovals,
		StreamBase:     s.base,
		ToolCalls:      consoleScreens{s: s},
		Fleet:          consoleFleet{cs: consoleScreens{s: s}},
		Menu:           consoleScreens{s: s}.menu,
		Traces:         consoleTraces{s: s},
		Tenants:        consoleTenants{s: s},
		Log:            s.log,
		Now:            s.now,
		Authorize:      s.authz.Authorize,
	}
	if s.cfg.OIDC != nil {
		for _, is := range s.cfg.OIDC.Issuers {
			deps.Issuers = append(deps.Issuers, signin.Issuer{ID: is.Name, Name: is.Name})
		}
		deps.TenantSSO = consoleTenantSSO{s: s}
	}
	if s.cfg.Signup {
		s.oidc.WithSignup(svc.Signup)
		for _, is := range s.cfg.OIDC.Issuers {
			if u, err := url.Parse(is.IssuerURL); err == nil {
				deps.SignupFormAction = append(deps.SignupFormAction, u.Scheme+"://"+u.Host)
			}
		}
		deps.Signup = consoleSignup{s: s, svc: svc}
		deps.SignupLimiter = oidc.NewLimiter(s.cfg.SignupLimit, s.now)
	}
	if s.cfg.OIDC != nil {
		deps.SecureCookies = s.cfg.OIDC.CookieSecure
	}
	cs, err := web.New(deps)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	s.console = cs
	if s.oidc != nil {
		s.oidc.RenderChoice = s.renderTenantChoice
	}
	return nil
}

// renderTenantChoice answers a sign-in that found several tenants with the
// console's choose-a-tenant page.
func (s *Server) renderTenantChoice(c *fiber.Ctx, ch oidc.TenantChoice) error {
	m := webtenants.Choice{Email: ch.Email, Action: ch.ChoosePath, TokenField: ch.TokenField, Token: ch.Token}
	for _, t := range ch.Tenants {
		name := t.DisplayName
		if name == "" {
			name = t.ID
		}
		m.Tenants = append(m.Tenants, webtenants.Option{ID: t.ID, Name: name})
	}
	return s.console.RenderTenantChoice(c, m)
}

// consoleRoutes mounts people sign-in (/auth/…) and the console. Every
// request other than GET, HEAD and OPTIONS outside the API passes
// consoleGuard: CSRF for session requests, and an audit record.
func (s *Server) consoleRoutes(app *fiber.App) {
	app.Use(s.consoleGuard)
	if s.oidc != nil && s.cfg.OIDC == nil {
		app.Get(oidc.LocalLinkPath, web.SecurityHeaders, s.console.PageErrors, s.oidc.LocalLink)
		app.Post("/auth/logout", web.SecurityHeaders, s.oidc.Logout)
		app.Post("/auth/switch", web.SecurityHeaders, s.console.PageErrors, s.oidc.Switch)
	}
	if s.oidc != nil && s.cfg.OIDC != nil {
		app.Get("/auth/login", web.SecurityHeaders, s.console.PageErrors, s.oidc.Login)
		app.Get("/auth/callback", web.SecurityHeaders, s.console.PageErrors, s.oidc.Callback)
		app.Post(oidc.ChoosePath, web.SecurityHeaders, s.console.PageErrors, s.oidc.Choose)
		app.Post("/auth/logout", web.SecurityHeaders, s.oidc.Logout)
		app.Post("/auth/switch", web.SecurityHeaders, s.console.PageErrors, s.oidc.Switch)
	}
	s.console.Register(app)
}

// consolePrincipal is the signed-in person of a console request; nobody
// without OIDC.
func (s *Server) consolePrincipal(c *fiber.Ctx) (auth.Principal, bool) {
	if s.oidc == nil {
		return auth.Principal{}, false
	}
	p, err := s.oidc.SessionPrincipal(c)
	if err != nil {
		if _, ok := apierr.As(err); !ok {
			s.log.ErrorContext(c.UserContext(), "console: resolve session", "err", err, "requestId", c.Locals(localRequestID))
		}
		return auth.Principal{}, false
	}
	return p, true
}

// authenticateSession lets /v1 accept a console session cookie when a
// request has no Authorization header. Cookies are ambient credentials, so
// every such request other than GET, HEAD and OPTIONS must carry the
// session's CSRF token; bearer requests need none.
func (s *Server) authenticateSession(c *fiber.Ctx) error {
	p, err := s.oidc.SessionPrincipal(c)
	if err != nil {
		if _, ok := apierr.As(err); ok {
			s.log.InfoContext(c.UserContext(), "unauthenticated request", "method", c.Method(), "path", c.Path(), "reason", err.Error(), "requestId", c.Locals(localRequestID))
		}
		return err
	}
	// A session acts in its own tenant: naming another one is refused
	// and audited as for a bearer credential.
	if err := s.authn.TenantGuard().Check(c.UserContext(), p, strings.Clone(c.Get(auth.HeaderTenant)), "control plane"); err != nil {
		return err
	}
	c.Locals(localPrincipal, p)
	c.SetUserContext(auth.WithPrincipal(c.UserContext(), p))
	return s.oidc.CSRF(c)
}

// isAPIPathForConsole reports paths that have their own authentication and audit.
func isAPIPathForConsole(path string) bool {
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/.well-known/") || path == "/healthz"
}

// consoleAction is what a console adapter did, for the audit record of the
// request; consoleGuard puts one into the request context.
type consoleAction struct {
	verb, namespace, resource string
	// tenant and actor, when set, attribute an anonymous request (sign-up).
	tenant, actor string
	err           error
	noted         bool
	// recorded is set when the service wrote the action's audit record
	// itself (an approval decision with its rationale).
	recorded bool
}

type consoleActionKey struct{}

// noteConsole records what a console action did; a no-op outside consoleGuard.
func noteConsole(ctx context.Context, verb, namespace, res string, err error) {
	if a, ok := ctx.Value(consoleActionKey{}).(*consoleAction); ok {
		a.verb, a.namespace, a.resource, a.err, a.noted = verb, namespace, res, err, true
	}
}

// consoleGuard checks CSRF on console writes that carry a session and
// writes one audit record per console write, whatever its outcome: the
// screens answer errors with a page (htmx with 200), so the outcome comes
// from what the adapter noted rather than from the status alone.
func (s *Server) consoleGuard(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if isAPIPathForConsole(c.Path()) {
		return c.Next()
	}
	act := &consoleAction{}
	ctx, _ := authz.WithTrail(c.UserContext())
	c.SetUserContext(context.WithValue(ctx, consoleActionKey{}, act))
	// Resolve the person before the handler runs: sign-out deletes the
	// session.
	p, signedIn := s.consolePrincipal(c)
	var err error
	if s.oidc != nil {
		err = s.oidc.CSRF(c)
	} else {
		err = c.Next()
	}
	s.auditConsole(c, p, signedIn, act, err)
	return err
}

func (s *Server) auditConsole(c *fiber.Ctx, p auth.Principal, signedIn bool, act *consoleAction, err error) {
	tenant, actor, policy := p.Tenant, p.Subject, authz.EffectivePolicy(c.UserContext(), p)
	if act.tenant != "" {
		tenant, actor, policy = act.tenant, act.actor, ""
	}
	if !signedIn && act.tenant == "" {
		return // nobody to attribute it to, and no tenant to write it in
	}
	if act.recorded && err == nil && act.err == nil {
		return
	}
	status := c.Response().StatusCode()
	if err != nil {
		status = statusOf(err)
	}
	outcome := audit.OutcomeAllowed
	switch {
	case act.err != nil && (errors.Is(act.err, auth.ErrForbidden) || statusOf(act.err) == http.StatusForbidden):
		outcome = audit.OutcomeDenied
	case act.err != nil:
		outcome = audit.OutcomeFailed
	case status == http.StatusForbidden:
		outcome = audit.OutcomeDenied
	case status >= 400:
		outcome = audit.OutcomeFailed
	}
	rec := audit.Record{Time: s.now().UTC(), Tenant: tenant, Actor: actor, Verb: act.verb, Namespace: act.namespace,
		Resource: act.resource, Outcome: outcome, Policy: policy}
	if !act.noted {
		rec.Verb, rec.Resource = "post", "console"+c.Path()
		switch c.Path() {
		case "/auth/logout":
			rec.Verb, rec.Resource = "signout", "sessions"
		case "/auth/switch":
			// Leaving this tenant (or refused to); the chosen tenant
			// records the arrival itself (app/oidc).
			rec.Verb, rec.Resource = "switch", "sessions"
		}
	}
	if e, ok := apierr.As(err); ok {
		rec.Reason = e.Code
	} else if e, ok := apierr.As(act.err); ok {
		rec.Reason = e.Code
	}
	ctx := context.WithoutCancel(c.UserContext())
	werr := s.store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	})
	if werr != nil {
		s.log.ErrorContext(ctx, "write console audit record", "err", werr, "requestId", c.Locals(localRequestID))
	}
}

// consoleTenants lists a person's tenants for the header's switcher and
// the /tenants page; other principals (keys, workloads) have none.
type consoleTenants struct{ s *Server }

func (a consoleTenants) Tenants(ctx context.Context, p auth.Principal) ([]store.TenantRecord, error) {
	if p.Kind != auth.KindUser || p.Email == "" {
		return nil, nil
	}
	ms, err := a.s.store.MembershipsByEmail(ctx, p.Email)
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	out := make([]store.TenantRecord, 0, len(ms))
	for _, m := range ms {
		rec, err := a.s.store.TenantGet(ctx, m.Tenant)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("read tenant %q: %w", m.Tenant, err)
		}
		out = append(out, *rec)
	}
	return out, nil
}

// consoleMembers serves the members screen over tenants.Service.
type consoleMembers struct {
	s   *Server
	svc *tenants.Service
}

func (a consoleMembers) Members(ctx context.Context, p auth.Principal) ([]members.Member, error) {
	ms, err := a.svc.MembersWithRoles(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]members.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, members.Member{Member: m.Member, Role: m.Summary()})
	}
	return out, nil
}

// Invite binds the person in the chosen namespace; "*" (the form's
// default) binds in namespace "default", because tenant-wide authority is
// ownership, not a binding.
func (a consoleMembers) Invite(ctx context.Context, p auth.Principal, inv members.Invitation) error {
	ns := domainOf(inv.Namespace)
	if ns == "" {
		ns = tenants.DefaultNamespace
	}
	err := a.invite(ctx, p, inv, ns)
	noteConsole(ctx, "invite", ns, "members/"+inv.Email, err)
	return err
}

func (a consoleMembers) invite(ctx context.Context, p auth.Principal, inv members.Invitation, ns string) error {
	if err := a.s.checkPrincipal(ctx, p, authz.VerbCreate, ns, authz.ObjMembers); err != nil {
		return err
	}
	if inv.Role == auth.RoleOwner {
		return apierr.New(apierr.CodeInvalidRequest, "ownership is not granted by invitation: invite the person with a role, then make them owner")
	}
	_, err := a.svc.Invite(ctx, p, inv.Email, inv.Role, ns)
	a.s.authz.Invalidate(p.Tenant)
	return err
}

// SetRole changes a member's role through tenants.Service.SetRole, the
// code path of POST /v1/members/{email}/role; "*" or empty binds in
// namespace "default".
func (a consoleMembers) SetRole(ctx context.Context, p auth.Principal, ch members.RoleChange) error {
	ns := domainOf(ch.Namespace)
	if ns == "" {
		ns = tenants.DefaultNamespace
	}
	_, err := a.svc.SetRole(ctx, p, ch.Email, ch.Role, ns)
	if ch.Role == auth.RoleOwner {
		ns = ""
	}
	noteConsole(ctx, "patch", ns, "members/"+ch.Email, err)
	return err
}

func (a consoleMembers) Remove(ctx context.Context, p auth.Principal, email string) error {
	err := a.s.checkPrincipal(ctx, p, auth.VerbDelete, "", authz.ObjMembers)
	if err == nil {
		err = a.svc.RemoveMember(ctx, p, email)
	}
	noteConsole(ctx, "delete", "", "members/"+email, err)
	return err
}

// consoleNamespaces lists Namespace resources and creates them through
// tenants.Service.
type consoleNamespaces struct {
	s   *Server
	svc *tenants.Service
}

// Namespaces lists every namespace to a tenant-wide reader, and otherwise
// the namespaces where the person may read agents.
func (a consoleNamespaces) Namespaces(ctx context.Context, p auth.Principal) ([]namespaces.Namespace, error) {
	all := a.s.authz.Authorize(ctx, p, auth.VerbList, "", "namespaces")
	if all != nil && !errors.Is(all, auth.ErrForbidden) {
		return nil, all
	}
	var objs []*resource.Object
	err := a.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		params := store.ListParams{Kind: resource.KindNamespace, Limit: store.MaxPageSize}
		for {
			page, err := r.ResourceList(ctx, params)
			if err != nil {
				return err
			}
			objs = append(objs, page.Items...)
			if page.Continue == "" {
				return nil
			}
			params.Continue = page.Continue
		}
	})
	if err != nil {
		return nil, storeError(err)
	}
	var out []namespaces.Namespace
	for _, o := range objs {
		if all != nil && !a.s.authz.Allowed(ctx, p, auth.VerbList, o.Metadata.Name, "agents") {
			continue
		}
		n := namespaces.Namespace{Name: o.Metadata.Name}
		n.DisplayName, _ = o.Spec["displayName"].(string)
		n.CreatedAt, _ = time.Parse(time.RFC3339, o.Metadata.CreationTimestamp)
		out = append(out, n)
	}
	if len(out) == 0 && all != nil {
		return nil, forbidden(all)
	}
	return out, nil
}

func (a consoleNamespaces) CreateNamespace(ctx context.Context, p auth.Principal, name string) error {
	err := a.s.checkPrincipal(ctx, p, auth.VerbApply, "", "namespaces")
	if err == nil {
		_, err = a.svc.CreateNamespace(ctx, p, name, "")
	}
	noteConsole(ctx, "apply", "", "namespaces/"+name, err)
	return err
}

// consoleAPIKeys manages API keys in the store, hashed, as the API reads
// them.
type consoleAPIKeys struct{ s *Server }

// APIKeys lists the keys of the namespaces where p may list keys.
func (a consoleAPIKeys) APIKeys(ctx context.Context, p auth.Principal) ([]store.APIKey, error) {
	var keys []store.APIKey
	err := a.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		keys, err = r.APIKeyList(ctx)
		return err
	})
	if err != nil {
		return nil, storeError(err)
	}
	out := keys[:0]
	for _, k := range keys {
		if a.s.authz.Allowed(ctx, p, auth.VerbList, domainOf(k.Namespace), authz.ObjAPIKeys) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (a consoleAPIKeys) CreateAPIKey(ctx context.Context, p auth.Principal, req apikeys.Request) (string, store.APIKey, error) {
	if req.Namespace == "" {
		req.Namespace = auth.AllNamespaces
	}
	secret, key, err := a.s.createAPIKey(ctx, p, api.APIKeyCreateRequest{Name: req.Name, Namespace: req.Namespace, Role: req.Role,
		Agent: req.Agent, ExpiresIn: req.ExpiresIn})
	noteConsole(ctx, "create", domainOf(req.Namespace), "apikeys/"+req.Name, err)
	return secret, key, err
}

func (a consoleAPIKeys) RevokeAPIKey(ctx context.Context, p auth.Principal, id string) error {
	name, ns := id, ""
	key, err := a.s.revokeAPIKey(ctx, p, id)
	if key != nil {
		name, ns = key.Name, domainOf(key.Namespace)
	}
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("API key %q not found", id)
	}
	noteConsole(ctx, "delete", ns, "apikeys/"+name, err)
	return err
}

// consoleAudit reads the audit log for tenant-wide admins and owners.
type consoleAudit struct{ s *Server }

func (a consoleAudit) Audit(ctx context.Context, p auth.Principal, q store.AuditListParams) ([]audit.Record, error) {
	if err := a.s.checkPrincipal(ctx, p, auth.VerbList, "", authz.ObjAudit); err != nil {
		return nil, err
	}
	var recs []audit.Record
	err := a.s.store.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		recs, err = r.AuditList(ctx, q)
		return err
	})
	return recs, storeError(err)
}

// consoleTenantSSO offers a tenant's own identity provider (the Tenant
// resource's spec.sso) on its sign-in page.
type consoleTenantSSO struct{ s *Server }

func (a consoleTenantSSO) TenantIssuers(ctx context.Context, tenant string) ([]signin.Issuer, error) {
	var sso *tenants.SSOConnection
	err := a.s.store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		sso, err = tenants.TenantSSO(ctx, r, tenant)
		return err
	})
	if err != nil || sso == nil || sso.Issuer == "" {
		return nil, err
	}
	return []signin.Issuer{{ID: "sso", Name: tenant + " single sign-on"}}, nil
}

// consoleSignup starts sign-ups (cfg.Signup only): it checks the tenant
// id and hands the person to the identity provider, whose callback
// creates the tenant with the e-mail address the provider verified
// (oidc.Handler.WithSignup).
type consoleSignup struct {
	s   *Server
	svc *tenants.Service
}

func (a consoleSignup) Check(ctx context.Context, tenant string) error {
	err := a.svc.CheckSignup(ctx, tenant)
	if e, ok := apierr.As(err); ok && e.Code == apierr.CodeConflict {
		return fmt.Errorf("%s: %w", e.Message, store.ErrAlreadyExists)
	}
	return err
}

func (a consoleSignup) Start(c *fiber.Ctx, req signup.Request) error {
	return a.s.oidc.StartSignup(c, a.s.cfg.OIDC.Issuers[0].Name,
		oidc.SignupIntent{Tenant: req.Tenant, DisplayName: req.DisplayName, OwnerName: req.OwnerName})
}
