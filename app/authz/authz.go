package authz

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
)

//go:embed model.conf
var modelText string

// TTL bounds how long a tenant's Enforcer is used without a rebuild, a
// safety net for a missed Invalidate.
const TTL = 30 * time.Second

// maxMemo caps the memoized decisions of one cache generation; past it,
// decisions are still correct, just computed by Casbin each time.
const maxMemo = 1 << 16

// Authorizer answers "may this principal do verb on object in namespace?".
// Build it with New; it is safe for concurrent use.
type Authorizer struct {
	store store.Store
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
	// epochs move on every Invalidate, so a build that raced an
	// invalidation is not cached.
	epochs map[string]uint64
	owners map[string][]string
}

// entry is one tenant's cache generation.
type entry struct {
	enforcer *casbin.SyncedEnforcer
	// resourceVersion is the newest RoleBinding/Tenant version read.
	resourceVersion int64
	expires         time.Time

	// grants are the grants the enforcer holds, by subject, to name the
	// one that allowed a call.
	grants map[string][]Grant

	mu   sync.RWMutex
	memo map[decisionKey]decision
}

type decisionKey struct {
	kind, subject, implicitRole, implicitNS, dom, obj, act string
}

// New returns an Authorizer reading grants from st. now is the clock of the
// cache TTL (nil means time.Now).
func New(st store.Store, now func() time.Time) *Authorizer {
	if now == nil {
		now = time.Now
	}
	return &Authorizer{store: st, now: now, entries: map[string]*entry{}, epochs: map[string]uint64{}, owners: map[string][]string{}}
}

// Invalidate drops tenant's cached Enforcer and decisions. Call it on every
// change of a RoleBinding or Tenant resource of that tenant and on every
// member change (the 30-second TTL catches a missed call).
func (a *Authorizer) Invalidate(tenant string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.entries, tenant)
	a.epochs[tenant]++
}

// SetOwners adds owners of tenant, who hold the owner role in every
// namespace, to those the store names (members with Owner set and the Tenant
// resource's spec.owner). It replaces the previous SetOwners list.
func (a *Authorizer) SetOwners(tenant string, emails []string) {
	cp := make([]string, 0, len(emails))
	for _, e := range emails {
		if e = strings.TrimSpace(e); e != "" {
			cp = append(cp, e)
		}
	}
	sort.Strings(cp)
	a.mu.Lock()
	a.owners[tenant] = cp
	a.mu.Unlock()
	a.Invalidate(tenant)
}

// Authorize returns nil when p may perform verb on object in namespace, an
// error wrapping auth.ErrForbidden when it may not, and another error when
// the grants could not be read. namespace "" addresses tenant-scope objects
// (namespaces, tenants, members), which only tenant-wide grants reach.
// object is a kind's lower-case plural ("agents") or one of the Obj
// constants ("approvals/decide"). When ctx carries a Trail (WithTrail), the
// grant that allowed the call is added to it for the audit record.
func (a *Authorizer) Authorize(ctx context.Context, p auth.Principal, verb, namespace, object string) error {
	grant, err := a.Decide(ctx, p, verb, namespace, object)
	if err != nil {
		return err
	}
	if t := TrailFrom(ctx); t != nil {
		t.add(grant)
	}
	return nil
}

// Allowed reports whether Authorize would allow the call; an error reading
// the grants counts as no. Console pages use it to decide what to offer.
func (a *Authorizer) Allowed(ctx context.Context, p auth.Principal, verb, namespace, object string) bool {
	_, err := a.Decide(ctx, p, verb, namespace, object)
	return err == nil
}

// Decide is Authorize without the Trail: it returns the grant that allows
// the call, as audit records name it ("RoleBinding team-a/ops:
// admin@team-a", "APIKey ci: editor@team-a", "system").
func (a *Authorizer) Decide(ctx context.Context, p auth.Principal, verb, namespace, object string) (string, error) {
	if p.System {
		return PolicySystem, nil
	}
	dom := namespace
	if dom == "" {
		dom = AllDomains
	}
	sub, implicitRole, implicitNS := subjectOf(p)
	if p.Tenant == "" || sub == "" {
		return "", a.denied(p, sub, verb, namespace, object)
	}
	e, err := a.entry(ctx, p.Tenant)
	if err != nil {
		return "", err
	}
	key := decisionKey{kind: p.Kind, subject: sub, implicitRole: implicitRole, implicitNS: implicitNS, dom: dom, obj: object, act: verb}
	e.mu.RLock()
	d, hit := e.memo[key]
	e.mu.RUnlock()
	if !hit {
		d, err = e.decide(key)
		if err != nil {
			return "", fmt.Errorf("authorize %s %s %s: %w", sub, verb, object, err)
		}
		e.mu.Lock()
		if len(e.memo) < maxMemo {
			e.memo[key] = d
		}
		e.mu.Unlock()
	}
	if !d.allowed {
		return "", a.denied(p, sub, verb, namespace, object)
	}
	return d.grant, nil
}

func (a *Authorizer) denied(p auth.Principal, sub, verb, namespace, object string) error {
	if sub == "" {
		sub = p.Subject
	}
	if namespace == "" {
		return fmt.Errorf("%w: %s may not %s %s at tenant scope (needs a tenant-wide grant)", auth.ErrForbidden, sub, verb, object)
	}
	return fmt.Errorf("%w: %s may not %s %s in namespace %q", auth.ErrForbidden, sub, verb, object, namespace)
}

// decision is one memoized answer: allowed, and by which grant.
type decision struct {
	allowed bool
	grant   string
}

// decide asks Casbin: the subject's own grants (RoleBindings, owners), then
// the implicit grant its credential carries (an API key's role in its
// namespace, a workload's agent role in its namespace). The policy line
// Casbin matched names the role; the grant is the subject's grant of that
// role reaching the domain.
func (e *entry) decide(k decisionKey) (decision, error) {
	ok, explain, err := e.enforcer.EnforceEx(k.subject, k.dom, k.obj, k.act)
	if err != nil {
		return decision{}, err
	}
	if ok {
		return decision{allowed: true, grant: e.grantOf(k.subject, explain, k.dom)}, nil
	}
	if k.implicitRole == "" || (k.implicitNS != auth.AllNamespaces && k.implicitNS != k.dom) {
		return decision{}, nil
	}
	// A role subject holds itself in every domain (Casbin's role manager
	// links a name to itself), so this asks "does the role allow it?".
	ok, err = e.enforcer.Enforce(roleSubject(k.implicitRole), k.dom, k.obj, k.act)
	if err != nil || !ok {
		return decision{}, err
	}
	return decision{allowed: true, grant: credentialGrant(k)}, nil
}

// grantOf returns the grant of subject that made Casbin match the policy
// line explain (role, domain, object, verb) in domain dom: a grant in dom
// itself before a tenant-wide one.
func (e *entry) grantOf(subject string, explain []string, dom string) string {
	role := ""
	if len(explain) > 0 {
		role = strings.TrimPrefix(explain[0], "role:")
	}
	var wide *Grant
	for i, g := range e.grants[subject] {
		if g.Role != role {
			continue
		}
		if g.Domain == dom {
			return g.String()
		}
		if g.Domain == AllDomains && wide == nil {
			wide = &e.grants[subject][i]
		}
	}
	if wide != nil {
		return wide.String()
	}
	return subject + ": " + role + "@" + dom
}

// credentialGrant names the implicit grant of a credential's own scope.
func credentialGrant(k decisionKey) string {
	switch k.kind {
	case auth.KindAgent:
		return "workload token " + strings.TrimPrefix(k.subject, "agent:") + ": " + k.implicitRole + "@" + k.implicitNS
	default:
		return "APIKey " + strings.TrimPrefix(k.subject, "apikey:") + ": " + k.implicitRole + "@" + k.implicitNS
	}
}

// subjectOf maps a principal to its Casbin subject and the implicit grant
// its credential carries.
func subjectOf(p auth.Principal) (sub, implicitRole, implicitNS string) {
	switch p.Kind {
	case auth.KindUser:
		email := p.Email
		if email == "" {
			email, _ = strings.CutPrefix(p.Subject, "user:")
		}
		if email == "" {
			return "", "", ""
		}
		// People hold roles only through RoleBindings and ownership; a role
		// carried on the principal is not trusted.
		return UserSubject(email), "", ""
	case auth.KindAgent:
		if p.Agent == "" || p.Namespace == "" || p.Namespace == auth.AllNamespaces {
			return "", "", ""
		}
		return AgentSubject(p.Namespace, p.Agent), RoleAgent, p.Namespace
	case auth.KindAPIKey, "":
		name, ok := strings.CutPrefix(p.Subject, "apikey:")
		if !ok || name == "" {
			return "", "", ""
		}
		role := p.Role
		if role == RoleBreakGlass {
			// Break-glass is bound deliberately in a RoleBinding, never
			// carried by a key.
			role = ""
		}
		return APIKeySubject(name), role, p.Namespace
	}
	return "", "", ""
}

// entry returns tenant's current cache generation, building it when absent
// or expired.
func (a *Authorizer) entry(ctx context.Context, tenant string) (*entry, error) {
	now := a.now()
	a.mu.Lock()
	e := a.entries[tenant]
	epoch := a.epochs[tenant]
	owners := a.owners[tenant]
	a.mu.Unlock()
	if e != nil && now.Before(e.expires) {
		return e, nil
	}
	e, err := a.build(ctx, tenant, owners, now)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.epochs[tenant] == epoch {
		a.entries[tenant] = e
	}
	a.mu.Unlock()
	return e, nil
}

func (a *Authorizer) build(ctx context.Context, tenant string, owners []string, now time.Time) (*entry, error) {
	var b *Bindings
	err := a.store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		b, err = LoadBindings(ctx, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("authz: tenant %q: %w", tenant, err)
	}
	grants := b.Grants
	for _, o := range owners {
		grants = append(grants, Grant{Subject: UserSubject(o), Role: auth.RoleOwner, Domain: AllDomains, Source: "owner " + strings.ToLower(o)})
	}
	bySubject := map[string][]Grant{}
	for _, g := range grants {
		bySubject[g.Subject] = append(bySubject[g.Subject], g)
	}
	enf, err := newEnforcer(grants)
	if err != nil {
		return nil, fmt.Errorf("authz: tenant %q: %w", tenant, err)
	}
	return &entry{enforcer: enf, resourceVersion: b.ResourceVersion, expires: now.Add(TTL), grants: bySubject, memo: map[decisionKey]decision{}}, nil
}

// newEnforcer builds a Casbin enforcer over the matrix and grants.
func newEnforcer(grants []Grant) (*casbin.SyncedEnforcer, error) {
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return nil, fmt.Errorf("parse casbin model: %w", err)
	}
	enf, err := casbin.NewSyncedEnforcer(m, &adapter{grants: grants})
	if err != nil {
		return nil, fmt.Errorf("build casbin enforcer: %w", err)
	}
	enf.EnableAutoSave(false)
	enf.AddFunction("objMatch", func(args ...any) (any, error) {
		if len(args) != 2 {
			return false, fmt.Errorf("objMatch takes 2 arguments, got %d", len(args))
		}
		req, _ := args[0].(string)
		pol, _ := args[1].(string)
		return objMatch(req, pol), nil
	})
	return enf, nil
}

// CachedVersion reports the newest RoleBinding/Tenant resourceVersion the
// tenant's cached Enforcer was built from, and whether one is cached.
func (a *Authorizer) CachedVersion(tenant string) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[tenant]
	if !ok || !a.now().Before(e.expires) {
		return 0, false
	}
	return e.resourceVersion, true
}
