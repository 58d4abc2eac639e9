package authz_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

const tenant = "acme"

// clock is a test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type bundle struct {
	st    store.Store
	az    *authz.Authorizer
	clock *clock
}

func setup(t testing.TB, url string) *bundle {
	t.Helper()
	st, err := backend.Open(context.Background(), url, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &bundle{st: st, az: authz.New(st, c.now), clock: c}
}

func sqliteURL(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "w.db")
}

func key(role, ns string) auth.Principal {
	return auth.Principal{Tenant: tenant, Subject: "apikey:k-" + role + "-" + ns, Role: role, Namespace: ns, Kind: auth.KindAPIKey}
}

func user(email string) auth.Principal {
	return auth.Principal{Tenant: tenant, Subject: "user:" + email, Email: email, Kind: auth.KindUser}
}

func (b *bundle) bind(t testing.TB, ns, name, role string, subjects ...resource.RoleSubject) {
	t.Helper()
	subs := make([]any, len(subjects))
	for i, s := range subjects {
		subs[i] = map[string]any{"kind": s.Kind, "name": s.Name}
	}
	o := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindRoleBinding,
		Metadata: resource.ObjectMeta{Name: name, Namespace: ns}, Spec: map[string]any{"role": role, "subjects": subs}}
	require.NoError(t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, o)
		return err
	}))
}

func (b *bundle) unbind(t testing.TB, ns, name string) {
	t.Helper()
	require.NoError(t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceDelete(ctx, resource.Key{Kind: resource.KindRoleBinding, Namespace: ns, Name: name}, "")
		return err
	}))
}

func allowed(t testing.TB, az *authz.Authorizer, p auth.Principal, verb, ns, obj string) bool {
	t.Helper()
	err := az.Authorize(context.Background(), p, verb, ns, obj)
	if err != nil {
		require.ErrorIs(t, err, auth.ErrForbidden, "only forbidden errors expected")
	}
	return err == nil
}

// TestMatrix walks role × verb × object through API keys, whose role comes
// from the credential (no RoleBinding needed).
func TestMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	const ns = "team-a"
	type cell struct {
		verb, obj string
		ns        string // "" = tenant scope; default ns
	}
	get := func(o string) cell { return cell{auth.VerbGet, o, ns} }
	list := func(o string) cell { return cell{auth.VerbList, o, ns} }
	apply := func(o string) cell { return cell{auth.VerbApply, o, ns} }
	del := func(o string) cell { return cell{auth.VerbDelete, o, ns} }
	status := func(o string) cell { return cell{auth.VerbWriteStatus, o, ns} }
	create := func(o string) cell { return cell{authz.VerbCreate, o, ns} }
	tenantScope := func(verb, o string) cell { return cell{verb, o, ""} }

	cells := []cell{
		get("agents"), list("agents"), {auth.VerbWatch, "agents", ns}, apply("agents"), {auth.VerbPatch, "agents", ns}, del("agents"), status("agents"),
		get("secrets"), apply("secrets"),
		get("toolcalls"), list("approvals"), apply("toolcalls"),
		get("rolebindings"), apply("rolebindings"), del("rolebindings"),
		create(authz.ObjApprovalsDecide), create(authz.ObjApprovalsOverride), create(authz.ObjToolCallsReplay), create(authz.ObjToolCalls),
		list(authz.ObjAPIKeys), create(authz.ObjAPIKeys), list(authz.ObjAudit), {auth.VerbWatch, authz.ObjResources, ns},
		tenantScope(auth.VerbList, "namespaces"), tenantScope(auth.VerbApply, "namespaces"), tenantScope(auth.VerbDelete, "tenants"),
		tenantScope(authz.VerbCreate, authz.ObjMembers),
	}
	// want[role] lists the cells allowed, by index into cells.
	y, n := true, false
	want := map[string][]bool{
		//                       get  list watch apply patch del status | sget sapply | tcget apprlist tcapply | rbget rbapply rbdel | decide override replay tccreate | keys keycreate audit feed | nslist nsapply tdel members
		auth.RoleViewer:   {y, y, y, n, n, n, n, y, n, y, y, n, y, n, n, n, n, n, n, n, n, n, y, n, n, n, n},
		auth.RoleEditor:   {y, y, y, y, y, y, n, y, y, y, y, n, y, n, n, n, n, n, n, n, n, n, y, n, n, n, n},
		auth.RoleApprover: {y, y, y, n, n, n, n, y, n, y, y, n, y, n, n, y, n, n, n, n, n, n, y, n, n, n, n},
		auth.RoleAdmin:    {y, y, y, y, y, y, y, y, y, y, y, n, y, y, y, y, n, y, n, y, y, y, y, n, n, n, n},
		// A tenant-wide owner key: everything but break-glass and the
		// gateway (which is for workloads).
		auth.RoleOwner: {y, y, y, y, y, y, y, y, y, y, y, n, y, y, y, y, n, y, n, y, y, y, y, y, y, y, y},
	}
	for role, w := range want {
		require.Len(t, w, len(cells), role)
		keyNS := ns
		if role == auth.RoleOwner {
			keyNS = auth.AllNamespaces
		}
		p := key(role, keyNS)
		for i, c := range cells {
			t.Run(role+"/"+c.verb+"/"+c.obj+"@"+c.ns, func(t *testing.T) {
				require.Equal(t, w[i], allowed(t, b.az, p, c.verb, c.ns, c.obj))
			})
		}
	}

	t.Run("key scoped to another namespace", func(t *testing.T) {
		p := key(auth.RoleAdmin, "team-b")
		for _, c := range cells {
			require.False(t, allowed(t, b.az, p, c.verb, c.ns, c.obj), "%+v", c)
		}
	})
	t.Run("tenant-wide admin key is admin everywhere but not owner", func(t *testing.T) {
		p := key(auth.RoleAdmin, auth.AllNamespaces)
		require.True(t, allowed(t, b.az, p, auth.VerbApply, "team-z", "agents"))
		require.True(t, allowed(t, b.az, p, auth.VerbList, "", "namespaces"))
		require.False(t, allowed(t, b.az, p, auth.VerbApply, "", "namespaces"))
		require.False(t, allowed(t, b.az, p, authz.VerbCreate, "", authz.ObjMembers))
	})
	t.Run("workload", func(t *testing.T) {
		p := auth.Principal{Tenant: tenant, Subject: "agent:team-a/triage", Kind: auth.KindAgent, Agent: "triage", Namespace: ns}
		require.True(t, allowed(t, b.az, p, authz.VerbCreate, ns, authz.ObjToolCalls))
		require.True(t, allowed(t, b.az, p, auth.VerbGet, ns, "tools"))
		require.True(t, allowed(t, b.az, p, auth.VerbList, ns, "models"))
		require.False(t, allowed(t, b.az, p, auth.VerbGet, ns, "secrets"))
		require.False(t, allowed(t, b.az, p, auth.VerbApply, ns, "agents"))
		require.False(t, allowed(t, b.az, p, auth.VerbGet, "team-b", "tools"))
		require.False(t, allowed(t, b.az, p, authz.VerbCreate, "team-b", authz.ObjToolCalls))
	})
	t.Run("system principal", func(t *testing.T) {
		require.True(t, allowed(t, b.az, auth.SystemPrincipal(tenant), authz.VerbCreate, "", authz.ObjApprovalsOverride))
	})
	t.Run("breakglass on a key is ignored", func(t *testing.T) {
		require.False(t, allowed(t, b.az, key(authz.RoleBreakGlass, ns), authz.VerbCreate, ns, authz.ObjApprovalsOverride))
	})
	t.Run("error names subject, verb, object and namespace", func(t *testing.T) {
		err := b.az.Authorize(context.Background(), key(auth.RoleViewer, ns), auth.VerbDelete, ns, "agents")
		require.ErrorIs(t, err, auth.ErrForbidden)
		require.EqualError(t, err, `forbidden: apikey:k-viewer-team-a may not delete agents in namespace "team-a"`)
	})
	t.Run("no tenant or unknown principal", func(t *testing.T) {
		require.False(t, allowed(t, b.az, auth.Principal{Subject: "apikey:x", Role: auth.RoleOwner, Namespace: "*", Kind: auth.KindAPIKey}, auth.VerbGet, ns, "agents"))
		require.False(t, allowed(t, b.az, auth.Principal{Tenant: tenant, Subject: "nobody", Kind: "martian", Role: auth.RoleOwner, Namespace: "*"}, auth.VerbGet, ns, "agents"))
	})
}

// TestPermissionsInvariants checks properties docs/authz.md promises.
func TestPermissionsInvariants(t *testing.T) {
	t.Parallel()
	has := func(role string, p authz.Permission) bool {
		for _, q := range authz.Permissions(role) {
			if q == p {
				return true
			}
		}
		return false
	}
	subset := func(a, b string) {
		for _, p := range authz.Permissions(a) {
			require.True(t, has(b, p), "%s has %v but %s does not", a, p, b)
		}
	}
	subset(auth.RoleViewer, auth.RoleEditor)
	subset(auth.RoleViewer, auth.RoleApprover)
	subset(auth.RoleEditor, auth.RoleAdmin)
	subset(auth.RoleApprover, auth.RoleAdmin)
	subset(auth.RoleAdmin, auth.RoleOwner)
	override := authz.Permission{Object: authz.ObjApprovalsOverride, Verb: authz.VerbCreate}
	for _, r := range authz.Roles() {
		require.Equal(t, r == authz.RoleBreakGlass, has(r, override), r)
	}
	replay := authz.Permission{Object: authz.ObjToolCallsReplay, Verb: authz.VerbCreate}
	require.True(t, has(auth.RoleAdmin, replay))
	require.False(t, has(auth.RoleEditor, replay))
	require.False(t, has(auth.RoleApprover, replay))
	// Nobody but the system writes system-only kinds through the matrix.
	for _, r := range authz.Roles() {
		for _, k := range resource.Kinds() {
			if k.SystemOnly {
				require.False(t, has(r, authz.Permission{Object: k.Plural, Verb: auth.VerbApply}), "%s applies %s", r, k.Plural)
			}
		}
	}
	require.Nil(t, authz.Permissions("superuser"))
}

// TestBindings loads RoleBindings from each real store.
func TestBindings(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(testing.TB) string{
		"sqlite":   sqliteURL,
		"postgres": func(t testing.TB) string { return pgtest.NewDatabase(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, url(t))
			b.bind(t, "team-a", "viewers", auth.RoleViewer, resource.RoleSubject{Kind: authz.SubjectUser, Name: "Ana@Example.com"})
			b.bind(t, "team-a", "editors", auth.RoleEditor,
				resource.RoleSubject{Kind: authz.SubjectUser, Name: "eve@example.com"},
				resource.RoleSubject{Kind: authz.SubjectAPIKey, Name: "ci"},
				resource.RoleSubject{Kind: authz.SubjectAgent, Name: "builder"},
				resource.RoleSubject{Kind: "Robot", Name: "r2"})
			b.bind(t, "team-b", "admins", auth.RoleAdmin, resource.RoleSubject{Kind: authz.SubjectUser, Name: "eve@example.com"})
			b.bind(t, "team-b", "breakglass", authz.RoleBreakGlass, resource.RoleSubject{Kind: authz.SubjectUser, Name: "oncall@example.com"})
			b.bind(t, "team-b", "bogus", auth.RoleOwner, resource.RoleSubject{Kind: authz.SubjectUser, Name: "mallory@example.com"})
			az := b.az

			ana := user("ana@example.com")
			require.True(t, allowed(t, az, ana, auth.VerbGet, "team-a", "agents"))
			require.False(t, allowed(t, az, ana, auth.VerbApply, "team-a", "agents"))
			require.False(t, allowed(t, az, ana, auth.VerbGet, "team-b", "agents"), "bound in team-a, refused in team-b")
			require.False(t, allowed(t, az, ana, auth.VerbList, "", "namespaces"), "a namespace binding does not reach tenant scope")

			eve := user("eve@example.com")
			require.True(t, allowed(t, az, eve, auth.VerbApply, "team-a", "agents"))
			require.False(t, allowed(t, az, eve, auth.VerbApply, "team-a", "rolebindings"))
			require.True(t, allowed(t, az, eve, auth.VerbApply, "team-b", "rolebindings"))
			require.False(t, allowed(t, az, eve, authz.VerbCreate, "team-b", authz.ObjApprovalsOverride), "admin does not imply break-glass")
			require.True(t, allowed(t, az, eve, authz.VerbCreate, "team-b", authz.ObjToolCallsReplay))

			// A key's RoleBinding adds to the role the key carries.
			ci := key(auth.RoleViewer, "team-b")
			ci.Subject = "apikey:ci"
			require.True(t, allowed(t, az, ci, auth.VerbApply, "team-a", "agents"), "from the binding")
			require.True(t, allowed(t, az, ci, auth.VerbGet, "team-b", "agents"), "from the key itself")
			require.False(t, allowed(t, az, ci, auth.VerbApply, "team-b", "agents"))

			builder := auth.Principal{Tenant: tenant, Subject: "agent:team-a/builder", Kind: auth.KindAgent, Agent: "builder", Namespace: "team-a"}
			require.True(t, allowed(t, az, builder, auth.VerbApply, "team-a", "tools"), "editor by binding")
			other := builder
			other.Agent = "other"
			require.False(t, allowed(t, az, other, auth.VerbApply, "team-a", "tools"))

			oncall := user("oncall@example.com")
			require.True(t, allowed(t, az, oncall, authz.VerbCreate, "team-b", authz.ObjApprovalsOverride))
			require.True(t, allowed(t, az, oncall, auth.VerbGet, "team-b", "approvals"))
			require.False(t, allowed(t, az, oncall, authz.VerbCreate, "team-a", authz.ObjApprovalsOverride))
			require.False(t, allowed(t, az, oncall, authz.VerbCreate, "team-b", authz.ObjApprovalsDecide))

			require.False(t, allowed(t, az, user("mallory@example.com"), auth.VerbGet, "team-b", "agents"), "owner cannot be bound")

			// Owners: members (SetOwners) and the Tenant resource.
			boss := user("boss@example.com")
			require.False(t, allowed(t, az, boss, auth.VerbApply, "", "namespaces"))
			az.SetOwners(tenant, []string{"Boss@example.com"})
			require.True(t, allowed(t, az, boss, auth.VerbApply, "", "namespaces"))
			require.True(t, allowed(t, az, boss, auth.VerbDelete, "team-z", "agents"))
			require.True(t, allowed(t, az, boss, authz.VerbCreate, "", authz.ObjMembers))
			require.False(t, allowed(t, az, boss, authz.VerbCreate, "team-a", authz.ObjApprovalsOverride), "owner does not imply break-glass")

			founder := user("founder@example.com")
			require.NoError(t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindTenant,
					Metadata: resource.ObjectMeta{Name: tenant}, Spec: map[string]any{"owner": "founder@example.com"}})
				return err
			}))
			az.Invalidate(tenant)
			require.True(t, allowed(t, az, founder, auth.VerbPatch, "", "tenants"))

			member := user("member.owner@example.com")
			require.False(t, allowed(t, az, member, auth.VerbApply, "", "namespaces"))
			require.NoError(t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
				return tx.MemberUpsert(ctx, store.Member{Email: "member.owner@example.com", Owner: true, Status: store.MemberActive, CreatedAt: b.clock.now()})
			}))
			az.Invalidate(tenant)
			require.True(t, allowed(t, az, member, auth.VerbApply, "", "namespaces"), "members with Owner set are owners")
			require.True(t, allowed(t, az, boss, auth.VerbApply, "", "namespaces"), "SetOwners still counts")

			// Tenants are isolated: the same user in another tenant has nothing.
			elsewhere := eve
			elsewhere.Tenant = "globex"
			require.False(t, allowed(t, az, elsewhere, auth.VerbGet, "team-a", "agents"))
		})
	}
}

// TestLoadBindings checks the adapter's reading of the store.
func TestLoadBindings(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	b.bind(t, "team-a", "v", auth.RoleViewer, resource.RoleSubject{Kind: authz.SubjectGroup, Name: "sre"}, resource.RoleSubject{Kind: authz.SubjectUser, Name: " "})
	var got *authz.Bindings
	require.NoError(t, b.st.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		got, err = authz.LoadBindings(ctx, r)
		return err
	}))
	require.Equal(t, []authz.Grant{{Subject: "group:sre", Role: auth.RoleViewer, Domain: "team-a", Source: "RoleBinding team-a/v"}}, got.Grants)
	require.Len(t, got.Skipped, 1)
	require.Positive(t, got.ResourceVersion)
}

func TestCache(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	ana := user("ana@example.com")
	can := func() bool { return allowed(t, b.az, ana, auth.VerbGet, "team-a", "agents") }

	require.False(t, can())
	b.bind(t, "team-a", "v", auth.RoleViewer, resource.RoleSubject{Kind: authz.SubjectUser, Name: "ana@example.com"})
	require.False(t, can(), "cached until invalidated")
	b.az.Invalidate(tenant)
	require.True(t, can())
	rv, ok := b.az.CachedVersion(tenant)
	require.True(t, ok)
	require.Positive(t, rv)

	b.unbind(t, "team-a", "v")
	require.True(t, can(), "cached until invalidated")
	b.clock.add(authz.TTL + time.Second)
	require.False(t, can(), "the TTL rebuilds without Invalidate")
}

func TestStoreErrorIsNotForbidden(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	require.NoError(t, b.st.Close())
	err := b.az.Authorize(context.Background(), key(auth.RoleOwner, "*"), auth.VerbGet, "team-a", "agents")
	require.Error(t, err)
	require.False(t, errors.Is(err, auth.ErrForbidden), "a store failure must not read as a denial: %v", err)
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if j%50 == 0 && i == 0 {
					b.az.Invalidate(tenant)
				}
				_ = b.az.Authorize(context.Background(), key(auth.RoleEditor, "team-a"), auth.VerbApply, "team-a", "agents")
			}
		}()
	}
	wg.Wait()
	require.True(t, allowed(t, b.az, key(auth.RoleEditor, "team-a"), auth.VerbApply, "team-a", "agents"))
}

// TestEffectivePolicy checks that the grant that allowed a call, not the
// role the principal carries, is what the audit record names.
func TestEffectivePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t, sqliteURL(t))
	b.bind(t, "team-a", "ops-admins", auth.RoleAdmin, resource.RoleSubject{Kind: authz.SubjectUser, Name: "ann@example.com"})
	b.bind(t, "team-b", "everyone", auth.RoleViewer, resource.RoleSubject{Kind: authz.SubjectUser, Name: "ann@example.com"})
	tests := []struct {
		name          string
		p             auth.Principal
		verb, ns, obj string
		want          string
	}{
		{"person admin by binding", user("ann@example.com"), auth.VerbApply, "team-a", "rolebindings", "RoleBinding team-a/ops-admins: admin@team-a"},
		{"person viewer elsewhere", user("ann@example.com"), auth.VerbGet, "team-b", "agents", "RoleBinding team-b/everyone: viewer@team-b"},
		{"api key scope", key(auth.RoleEditor, "team-a"), auth.VerbApply, "team-a", "agents", "APIKey k-editor-team-a: editor@team-a"},
		{"workload", auth.Principal{Tenant: tenant, Subject: "agent:team-a/bot", Kind: auth.KindAgent, Agent: "bot", Namespace: "team-a"},
			authz.VerbCreate, "team-a", authz.ObjToolCalls, "workload token team-a/bot: agent@team-a"},
		{"system", auth.SystemPrincipal(tenant), auth.VerbApply, "", "tenants", authz.PolicySystem},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, trail := authz.WithTrail(context.Background())
			require.NoError(t, b.az.Authorize(ctx, tc.p, tc.verb, tc.ns, tc.obj))
			require.Equal(t, tc.want, authz.EffectivePolicy(ctx, tc.p))
			if !tc.p.System {
				require.Equal(t, tc.want, trail.Policy())
			}
		})
	}
	t.Run("refused adds nothing", func(t *testing.T) {
		ctx, trail := authz.WithTrail(context.Background())
		require.Error(t, b.az.Authorize(ctx, user("ann@example.com"), auth.VerbApply, "team-b", "agents"))
		require.Empty(t, trail.Policy())
		require.Equal(t, authz.PolicyNone, authz.EffectivePolicy(ctx, user("ann@example.com")))
	})
	t.Run("tenant owner", func(t *testing.T) {
		b.az.SetOwners(tenant, []string{"Root@Example.com"})
		g, err := b.az.Decide(context.Background(), user("root@example.com"), auth.VerbApply, "", "namespaces")
		require.NoError(t, err)
		require.Equal(t, "owner root@example.com: owner@*", g)
	})
}

func TestMostPrivileged(t *testing.T) {
	t.Parallel()
	require.Equal(t, auth.RoleApprover, authz.MostPrivileged(auth.RoleViewer, auth.RoleApprover))
	require.Equal(t, auth.RoleEditor, authz.MostPrivileged(auth.RoleApprover, auth.RoleEditor))
	require.Equal(t, auth.RoleAdmin, authz.MostPrivileged(auth.RoleEditor, auth.RoleAdmin, auth.RoleApprover))
	require.Equal(t, "", authz.MostPrivileged("nope"))
	require.True(t, authz.Covers(auth.RoleAdmin, auth.RoleApprover))
	require.False(t, authz.Covers(auth.RoleEditor, auth.RoleApprover))
}
