// Package webtest is an in-memory, working stand-in for everything the
// console depends on: tenants, members, namespaces, API keys, the audit log,
// sessions, CSRF and a fake /auth/login. Golden tests, handler tests and the
// browser tests in e2e/ run the real console against it. It is not used in
// production.
package webtest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	appaudit "github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web"
	"github.com/warden-dev/warden/web/apikeys"
	"github.com/warden-dev/warden/web/members"
	"github.com/warden-dev/warden/web/namespaces"
	"github.com/warden-dev/warden/web/signin"
	"github.com/warden-dev/warden/web/signup"
)

// Cookie names of the fake session and CSRF token.
const (
	SessionCookie = "warden_session"
	CSRFCookie    = "warden_csrf"
)

// Fake holds the in-memory state.
type Fake struct {
	mu         sync.Mutex
	now        func() time.Time
	tenants    map[string]store.TenantRecord
	members    map[string][]members.Member
	namespaces map[string][]namespaces.Namespace
	keys       map[string][]store.APIKey
	audit      map[string][]appaudit.Record
	sessions   map[string]auth.Principal
	seq        int
	started    []signup.Request
	// FixedCSRF, when set, is the CSRF token of every request (golden files
	// need stable output).
	FixedCSRF string
	// FixedSecrets, when set, are handed out as new API key secrets in
	// order (golden files need stable output).
	FixedSecrets []string
}

// New returns an empty fake whose clock is now.
func New(now func() time.Time) *Fake {
	return &Fake{
		now: now, tenants: map[string]store.TenantRecord{}, members: map[string][]members.Member{},
		namespaces: map[string][]namespaces.Namespace{}, keys: map[string][]store.APIKey{},
		audit: map[string][]appaudit.Record{}, sessions: map[string]auth.Principal{},
	}
}

// Deps returns console dependencies backed by the fake.
func (f *Fake) Deps() web.Deps {
	return web.Deps{
		Principal: f.Principal, CSRFToken: f.CSRFToken,
		Issuers:   []signin.Issuer{{ID: "test", Name: "Test IdP"}},
		TenantSSO: f,
		Signup:    f, Members: f, Namespaces: f, APIKeys: f, Audit: f, Tenants: f, Traces: f,
		Now: f.now, Authorize: f.Authorize,
	}
}

// Authorize stands in for app/authz over the fake's principals, which carry
// their role: the role's permissions of the authz matrix, in the
// namespace the principal is scoped to ("" = tenant scope needs "*").
func (f *Fake) Authorize(_ context.Context, p auth.Principal, verb, namespace, object string) error {
	if p.System {
		return nil
	}
	if p.Namespace != auth.AllNamespaces && p.Namespace != namespace {
		return fmt.Errorf("%w: %s is scoped to namespace %q", auth.ErrForbidden, p.Subject, p.Namespace)
	}
	for _, perm := range authz.Permissions(p.Role) {
		if perm.Object == object && perm.Verb == verb {
			return nil
		}
	}
	return fmt.Errorf("%w: role %s may not %s %s", auth.ErrForbidden, p.Role, verb, object)
}

// Mount installs the fake CSRF check and the fake OIDC endpoints
// (/auth/login signs in as the tenant's first owner; /auth/logout ends the
// session) on app. Call it before Console.Register.
func (f *Fake) Mount(app *fiber.App) {
	app.Use(f.CSRF)
	app.Get("/auth/login", func(c *fiber.Ctx) error {
		tenant := strings.Clone(c.Query("tenant")) // fiber reuses its buffers
		f.mu.Lock()
		ms := f.members[tenant]
		f.mu.Unlock()
		if len(ms) == 0 {
			return c.Redirect("/signin?error=unknown_tenant", fiber.StatusSeeOther)
		}
		sid := f.SignIn(tenant, ms[0].Email)
		c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: sid, Path: "/", HTTPOnly: true, SameSite: "Lax"})
		return c.Redirect("/members", fiber.StatusSeeOther)
	})
	app.Post("/auth/logout", func(c *fiber.Ctx) error {
		f.mu.Lock()
		delete(f.sessions, c.Cookies(SessionCookie))
		f.mu.Unlock()
		c.ClearCookie(SessionCookie)
		return c.Redirect("/signin?error=signed_out", fiber.StatusSeeOther)
	})
}

// SignIn starts a session for email in tenant and returns the cookie value.
func (f *Fake) SignIn(tenant, email string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := auth.Principal{Tenant: tenant, Subject: "user:" + email, Email: email, Kind: auth.KindUser, Namespace: auth.AllNamespaces, Role: auth.RoleViewer}
	for i, m := range f.members[tenant] {
		if m.Email == email {
			if m.Owner {
				p.Role = auth.RoleOwner
			} else if m.Role != "" {
				p.Role = m.Role
			}
			now := f.now()
			f.members[tenant][i].Status, f.members[tenant][i].LastLogin = store.MemberActive, &now
		}
	}
	sid := randomHex()
	f.sessions[sid] = p
	return sid
}

// Principal reads the fake session cookie.
func (f *Fake) Principal(c *fiber.Ctx) (auth.Principal, bool) {
	return f.Session(c.Cookies(SessionCookie))
}

// Session returns the principal of a session cookie value.
func (f *Fake) Session(id string) (auth.Principal, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.sessions[id] // map lookup only: id may be a fiber buffer
	return p, ok
}

// CSRFToken returns the double-submit token, setting its cookie on first use.
func (f *Fake) CSRFToken(c *fiber.Ctx) string {
	if f.FixedCSRF != "" {
		return f.FixedCSRF
	}
	if t := c.Cookies(CSRFCookie); t != "" {
		return t
	}
	t := randomHex()
	c.Cookie(&fiber.Cookie{Name: CSRFCookie, Value: t, Path: "/", HTTPOnly: true, SameSite: "Strict"})
	c.Request().Header.SetCookie(CSRFCookie, t)
	return t
}

// CSRF rejects unsafe requests whose form field or X-CSRF-Token header does
// not match the token cookie.
func (f *Fake) CSRF(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead {
		return c.Next()
	}
	want := c.Cookies(CSRFCookie)
	if f.FixedCSRF != "" {
		want = f.FixedCSRF
	}
	got := c.Get("X-CSRF-Token")
	if got == "" {
		got = c.FormValue("csrf_token")
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return c.Status(fiber.StatusForbidden).SendString("CSRF token missing or wrong")
	}
	return c.Next()
}

func (f *Fake) record(p auth.Principal, verb, ns, res string) {
	recs := f.audit[p.Tenant]
	f.audit[p.Tenant] = append(recs, appaudit.Record{
		Seq: int64(len(recs) + 1), Time: f.now(), Tenant: p.Tenant, Actor: p.Subject, Verb: verb,
		Namespace: ns, Resource: res, Outcome: appaudit.OutcomeAllowed, Policy: "role:" + p.Role + "@" + p.Namespace,
	})
}

// AddAudit appends a record to a tenant's log (for paging tests).
func (f *Fake) AddAudit(r appaudit.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Seq = int64(len(f.audit[r.Tenant]) + 1)
	f.audit[r.Tenant] = append(f.audit[r.Tenant], r)
}

// Signup creates a tenant, its owner (ownerEmail) and a default namespace,
// as a sign-up the identity provider verified does.
func (f *Fake) Signup(_ context.Context, req signup.Request, ownerEmail string) (store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tenants[req.Tenant]; ok {
		return store.TenantRecord{}, fmt.Errorf("tenant %q: %w", req.Tenant, store.ErrAlreadyExists)
	}
	t := store.TenantRecord{ID: req.Tenant, DisplayName: req.DisplayName, CreatedAt: f.now()}
	f.tenants[t.ID] = t
	f.members[t.ID] = []members.Member{{Member: store.Member{Tenant: t.ID, Email: ownerEmail, Name: req.OwnerName, Owner: true,
		Status: store.MemberInvited, InvitedBy: "signup", CreatedAt: f.now()}, Role: auth.RoleOwner}}
	f.namespaces[t.ID] = []namespaces.Namespace{{Name: "default", DisplayName: "Default", CreatedAt: f.now()}}
	f.record(auth.Principal{Tenant: t.ID, Subject: "signup:" + ownerEmail}, "signup", "", "tenants/"+t.ID)
	return t, nil
}

// Check refuses a tenant id that exists.
func (f *Fake) Check(_ context.Context, tenant string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tenants[tenant]; ok {
		return fmt.Errorf("tenant %q: %w", tenant, store.ErrAlreadyExists)
	}
	return nil
}

// SignupIdP is where the fake's Start sends a sign-up: a stand-in for the
// identity provider's authorization endpoint.
const SignupIdP = "https://idp.test/authorize"

// Start sends the sign-up to SignupIdP and remembers it (Started).
func (f *Fake) Start(c *fiber.Ctx, req signup.Request) error {
	f.mu.Lock()
	f.started = append(f.started, req)
	f.mu.Unlock()
	return c.Redirect(SignupIdP+"?tenant="+url.QueryEscape(req.Tenant), fiber.StatusSeeOther)
}

// Started returns the sign-ups Start sent to the identity provider.
func (f *Fake) Started() []signup.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]signup.Request(nil), f.started...)
}

// TenantIssuers gives every tenant an SSO issuer named after it.
func (f *Fake) TenantIssuers(_ context.Context, tenant string) ([]signin.Issuer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tenants[tenant]
	if !ok {
		return nil, nil
	}
	return []signin.Issuer{{ID: "sso-" + t.ID, Name: t.DisplayName + " SSO"}}, nil
}

// Tenants lists the tenants p's e-mail belongs to.
func (f *Fake) Tenants(_ context.Context, p auth.Principal) ([]store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.TenantRecord
	for id, ms := range f.members {
		for _, m := range ms {
			if m.Email == p.Email {
				out = append(out, f.tenants[id])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Members lists p's tenant's members by e-mail.
func (f *Fake) Members(_ context.Context, p auth.Principal) ([]members.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]members.Member(nil), f.members[p.Tenant]...)
	sort.Slice(out, func(i, j int) bool { return out[i].Email < out[j].Email })
	return out, nil
}

// Invite adds a member.
func (f *Fake) Invite(ctx context.Context, p auth.Principal, inv members.Invitation) error {
	if err := f.Authorize(ctx, p, authz.VerbCreate, "", authz.ObjMembers); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members[p.Tenant] {
		if m.Email == inv.Email {
			return fmt.Errorf("member %s: %w", inv.Email, store.ErrAlreadyExists)
		}
	}
	role := inv.Role
	if role != auth.RoleOwner {
		role += " in " + inv.Namespace
	}
	f.members[p.Tenant] = append(f.members[p.Tenant], members.Member{Member: store.Member{Tenant: p.Tenant, Email: inv.Email,
		Owner: inv.Role == auth.RoleOwner, Status: store.MemberInvited, InvitedBy: p.Email, CreatedAt: f.now()}, Role: role})
	f.record(p, "invite", "", "members/"+inv.Email)
	return nil
}

// SetRole changes a member's role: owner needs patch on members from the
// authorizer, a namespace role replaces the member's role summary.
func (f *Fake) SetRole(ctx context.Context, p auth.Principal, ch members.RoleChange) error {
	verb := authz.VerbCreate
	if ch.Role == auth.RoleOwner {
		verb = auth.VerbPatch
	}
	if err := f.Authorize(ctx, p, verb, "", authz.ObjMembers); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members[p.Tenant] {
		if m.Email != ch.Email {
			continue
		}
		if ch.Role == auth.RoleOwner {
			f.members[p.Tenant][i].Owner, f.members[p.Tenant][i].Role = true, auth.RoleOwner
		} else {
			f.members[p.Tenant][i].Role = ch.Role + " in " + ch.Namespace
		}
		f.record(p, "patch", "", "members/"+ch.Email)
		return nil
	}
	return fmt.Errorf("member %s: %w", ch.Email, store.ErrNotFound)
}

// Remove removes a member.
func (f *Fake) Remove(ctx context.Context, p auth.Principal, email string) error {
	if err := f.Authorize(ctx, p, auth.VerbDelete, "", authz.ObjMembers); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := f.members[p.Tenant]
	for i, m := range ms {
		if m.Email == email {
			f.members[p.Tenant] = append(ms[:i:i], ms[i+1:]...)
			f.record(p, "delete", "", "members/"+email)
			return nil
		}
	}
	return fmt.Errorf("member %s: %w", email, store.ErrNotFound)
}

// Namespaces lists p's tenant's namespaces.
func (f *Fake) Namespaces(_ context.Context, p auth.Principal) ([]namespaces.Namespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]namespaces.Namespace(nil), f.namespaces[p.Tenant]...), nil
}

// CreateNamespace adds a namespace.
func (f *Fake) CreateNamespace(ctx context.Context, p auth.Principal, name string) error {
	if err := f.Authorize(ctx, p, auth.VerbApply, "", "namespaces"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.namespaces[p.Tenant] {
		if n.Name == name {
			return fmt.Errorf("namespace %s: %w", name, store.ErrAlreadyExists)
		}
	}
	f.namespaces[p.Tenant] = append(f.namespaces[p.Tenant], namespaces.Namespace{Name: name, CreatedAt: f.now()})
	f.record(p, "apply", "", "namespaces/"+name)
	return nil
}

// APIKeys lists p's tenant's keys.
func (f *Fake) APIKeys(_ context.Context, p auth.Principal) ([]store.APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.APIKey(nil), f.keys[p.Tenant]...), nil
}

// CreateAPIKey makes a key and keeps only its hash.
func (f *Fake) CreateAPIKey(ctx context.Context, p auth.Principal, req apikeys.Request) (string, store.APIKey, error) {
	if err := f.Authorize(ctx, p, authz.VerbCreate, "", authz.ObjAPIKeys); err != nil {
		return "", store.APIKey{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	secret, hash, err := auth.NewAPIKeySecret()
	if err != nil {
		return "", store.APIKey{}, err
	}
	if len(f.FixedSecrets) > 0 {
		secret, f.FixedSecrets = f.FixedSecrets[0], f.FixedSecrets[1:]
		hash = auth.HashAPIKey(secret)
	}
	f.seq++
	k := store.APIKey{ID: fmt.Sprintf("key-%d", f.seq), Tenant: p.Tenant, Name: req.Name, SecretHash: hash,
		Namespace: req.Namespace, Role: req.Role, Agent: req.Agent, CreatedAt: f.now()}
	if k.Agent != "" {
		k.Role = authz.RoleAgent
	}
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil {
			return "", store.APIKey{}, fmt.Errorf("expiresIn: %w", err)
		}
		exp := f.now().Add(d)
		k.ExpiresAt = &exp
	}
	f.keys[p.Tenant] = append(f.keys[p.Tenant], k)
	f.record(p, "apply", "", "apikeys/"+k.Name)
	return secret, k, nil
}

// TouchAPIKey records that a key was used at t (as the API's
// authentication does).
func (f *Fake) TouchAPIKey(tenant, id string, t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, k := range f.keys[tenant] {
		if k.ID == id {
			f.keys[tenant][i].LastUsedAt = &t
		}
	}
}

// RevokeAPIKey marks a key revoked.
func (f *Fake) RevokeAPIKey(ctx context.Context, p auth.Principal, id string) error {
	if err := f.Authorize(ctx, p, auth.VerbDelete, "", authz.ObjAPIKeys); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, k := range f.keys[p.Tenant] {
		if k.ID == id && k.RevokedAt == nil {
			now := f.now()
			f.keys[p.Tenant][i].RevokedAt = &now
			f.record(p, "delete", "", "apikeys/"+k.Name)
			return nil
		}
	}
	return fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
}

// VerifyAPIKey authenticates a secret the way the API does (by hash).
func (f *Fake) VerifyAPIKey(secret string) (store.APIKey, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := auth.HashAPIKey(secret)
	for _, ks := range f.keys {
		for _, k := range ks {
			if k.SecretHash == h && k.RevokedAt == nil {
				return k, true
			}
		}
	}
	return store.APIKey{}, false
}

// Audit filters and pages p's tenant's log.
func (f *Fake) Audit(_ context.Context, p auth.Principal, q store.AuditListParams) ([]appaudit.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs := slices.Clone(f.audit[p.Tenant])
	if q.NewestFirst {
		slices.Reverse(recs)
	}
	var out []appaudit.Record
	for _, r := range recs {
		if r.Seq <= q.After || (q.Before > 0 && r.Seq >= q.Before) || (q.Actor != "" && !strings.Contains(r.Actor, q.Actor)) || (q.Verb != "" && r.Verb != q.Verb) || (q.Namespace != "" && r.Namespace != q.Namespace) {
			continue
		}
		out = append(out, r)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// LoginURL is the fake code-flow start for a tenant.
func LoginURL(tenant string) string {
	return "/auth/login?issuer=test&tenant=" + url.QueryEscape(tenant)
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
