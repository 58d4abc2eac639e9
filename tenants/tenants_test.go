package tenants

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

type bundle struct {
	ctx context.Context
	st  *failingStore
	az  *authz.Authorizer
	svc *Service
}

// failingStore fails every tenant transaction after its function succeeded,
// when fail is set: the strongest all-or-nothing check, since everything
// was written inside the transaction before it fails.
type failingStore struct {
	store.Store
	fail error
}

func (f *failingStore) Update(ctx context.Context, tenant string, fn func(context.Context, store.Tx) error) error {
	return f.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return f.fail
	})
}

func (f *failingStore) TenantDelete(ctx context.Context, id string) error {
	return f.Store.(tenantDeleter).TenantDelete(ctx, id)
}

// forEachStore runs fn against SQLite and Postgres.
func forEachStore(t *testing.T, fn func(t *testing.T, b bundle)) {
	for name, open := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + t.TempDir() + "/w.db" },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			real, err := backend.Open(ctx, open(t), backend.Options{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = real.Close() })
			st := &failingStore{Store: real}
			now := func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) }
			az := authz.New(st, now)
			fn(t, bundle{ctx: ctx, st: st, az: az, svc: New(st, az, now, slog.New(slog.DiscardHandler))})
		})
	}
}

func owner(tenant string) auth.Principal {
	return auth.Principal{Tenant: tenant, Subject: "user:owner@acme.example", Role: auth.RoleOwner, Namespace: auth.AllNamespaces, Kind: auth.KindUser, Email: "owner@acme.example"}
}

func code(err error) string {
	if e, ok := apierr.As(err); ok {
		return e.Code
	}
	return ""
}

func TestSignupSeedsTenant(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b bundle) {
		rec, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", DisplayName: "Acme", OwnerEmail: " Owner@Acme.example ", OwnerName: "Olga"})
		require.NoError(t, err)
		require.Equal(t, "acme", rec.ID)

		err = b.st.View(b.ctx, "acme", func(ctx context.Context, r store.Reader) error {
			ten, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: "acme"})
			require.NoError(t, err)
			require.Equal(t, "owner@acme.example", ten.Spec["owner"])
			_, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindNamespace, Name: "default"})
			require.NoError(t, err)
			for _, env := range []string{"dev", "staging", "prod"} {
				_, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindEnvironment, Namespace: "default", Name: env})
				require.NoError(t, err, env)
			}
			m, err := r.MemberGet(ctx, "owner@acme.example")
			require.NoError(t, err)
			require.True(t, m.Owner)
			require.Equal(t, store.MemberActive, m.Status)
			return nil
		})
		require.NoError(t, err)
	})
}

func TestSignupRefusals(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b bundle) {
		_, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", OwnerEmail: "o@acme.example"})
		require.NoError(t, err)

		for _, tc := range []struct {
			name, id, email, code, msg string
		}{
			{"duplicate", "acme", "x@acme.example", apierr.CodeConflict, "tenant name taken"},
			{"bad id", "Acme_Corp", "x@acme.example", apierr.CodeInvalidRequest, "DNS-1123"},
			{"reserved", "default", "x@acme.example", apierr.CodeInvalidRequest, "reserved"},
			{"bad email", "beta", "not-an-email", apierr.CodeInvalidRequest, "ownerEmail"},
			{"no email", "beta", "", apierr.CodeInvalidRequest, "ownerEmail: required"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: tc.id, OwnerEmail: tc.email})
				require.Error(t, err)
				require.Equal(t, tc.code, code(err), err.Error())
				require.Contains(t, err.Error(), tc.msg)
			})
		}
	})
}

func TestSignupAllOrNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b bundle) {
		b.st.fail = errors.New("injected failure after every write")
		_, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", OwnerEmail: "o@acme.example"})
		require.ErrorContains(t, err, "injected failure")

		_, err = b.st.TenantGet(b.ctx, "acme")
		require.ErrorIs(t, err, store.ErrNotFound, "the directory entry must be compensated")
		err = b.st.View(b.ctx, "acme", func(ctx context.Context, r store.Reader) error {
			for _, k := range []string{resource.KindTenant, resource.KindNamespace, resource.KindEnvironment} {
				page, err := r.ResourceList(ctx, store.ListParams{Kind: k})
				require.NoError(t, err)
				require.Empty(t, page.Items, k)
			}
			return nil
		})
		require.NoError(t, err)
		ms, err := b.st.MembershipsByEmail(b.ctx, "o@acme.example")
		require.NoError(t, err)
		require.Empty(t, ms)

		// The name is free again.
		b.st.fail = nil
		_, err = b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", OwnerEmail: "o@acme.example"})
		require.NoError(t, err)
	})
}

func TestInviteBindRemove(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b bundle) {
		_, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", OwnerEmail: "owner@acme.example"})
		require.NoError(t, err)
		p := owner("acme")

		m, err := b.svc.Invite(b.ctx, p, "Bob@acme.example", auth.RoleEditor, "")
		require.NoError(t, err)
		require.Equal(t, store.MemberInvited, m.Status)
		require.Equal(t, "bob@acme.example", m.Email)

		ns, err := b.svc.CreateNamespace(b.ctx, p, "payments", "Payments")
		require.NoError(t, err)
		require.Equal(t, "payments", ns.Metadata.Name)
		_, err = b.svc.CreateNamespace(b.ctx, p, "payments", "")
		require.Equal(t, apierr.CodeConflict, code(err))

		rb, err := b.svc.BindRole(b.ctx, p, "payments", "bob@acme.example", auth.RoleApprover)
		require.NoError(t, err)
		require.Equal(t, "approver", rb.Spec["role"])
		rb, err = b.svc.BindRole(b.ctx, p, "payments", "bob@acme.example", auth.RoleAdmin)
		require.NoError(t, err)
		require.Equal(t, "admin", rb.Spec["role"])

		err = b.st.View(b.ctx, "acme", func(ctx context.Context, r store.Reader) error {
			o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindRoleBinding, Namespace: "default", Name: MemberBindingName("bob@acme.example")})
			require.NoError(t, err)
			require.Equal(t, "editor", o.Spec["role"])
			spec, err := resource.DecodeSpec[resource.RoleBindingSpec](o)
			require.NoError(t, err)
			require.Equal(t, []resource.RoleSubject{{Kind: "User", Name: "bob@acme.example"}}, spec.Subjects)
			_, err = r.ResourceGet(ctx, resource.Key{Kind: resource.KindEnvironment, Namespace: "payments", Name: "prod"})
			require.NoError(t, err)
			return nil
		})
		require.NoError(t, err)

		// An editor may not invite; a person made admin of a namespace by a
		// RoleBinding may, but only there: app/authz decides, and a role
		// carried on a person's principal counts for nothing.
		b.az.Invalidate("acme")
		_, err = b.svc.Invite(b.ctx, auth.Principal{Tenant: "acme", Role: auth.RoleEditor, Namespace: auth.AllNamespaces}, "c@acme.example", "viewer", "")
		require.Equal(t, apierr.CodeForbidden, code(err))
		_, err = b.svc.Invite(b.ctx, auth.Principal{Tenant: "acme", Subject: "user:bob@acme.example", Email: "bob@acme.example", Kind: auth.KindUser,
			Role: auth.RoleOwner, Namespace: auth.AllNamespaces}, "c@acme.example", "viewer", "default")
		require.Equal(t, apierr.CodeForbidden, code(err), "bob is an editor in default, whatever his principal claims")
		nsAdmin := auth.Principal{Tenant: "acme", Subject: "user:bob@acme.example", Email: "bob@acme.example", Kind: auth.KindUser}
		_, err = b.svc.Invite(b.ctx, nsAdmin, "c@acme.example", "viewer", "payments")
		require.NoError(t, err)
		_, err = b.svc.Invite(b.ctx, nsAdmin, "d@acme.example", "viewer", "default")
		require.Equal(t, apierr.CodeForbidden, code(err))

		_, err = b.svc.Invite(b.ctx, p, "e@acme.example", "owner", "")
		require.Equal(t, apierr.CodeInvalidRequest, code(err))
		_, err = b.svc.Invite(b.ctx, p, "e@acme.example", "viewer", "nope")
		require.Equal(t, apierr.CodeNotFound, code(err))
		_, err = b.svc.BindRole(b.ctx, p, "default", "stranger@acme.example", "viewer")
		require.Equal(t, apierr.CodeNotFound, code(err))

		ms, err := b.svc.Members(b.ctx, p)
		require.NoError(t, err)
		require.Len(t, ms, 3)

		require.NoError(t, b.svc.RemoveMember(b.ctx, p, "bob@acme.example"))
		err = b.st.View(b.ctx, "acme", func(ctx context.Context, r store.Reader) error {
			page, err := r.ResourceList(ctx, store.ListParams{Kind: resource.KindRoleBinding})
			require.NoError(t, err)
			for _, o := range page.Items {
				require.NotEqual(t, MemberBindingName("bob@acme.example"), o.Metadata.Name)
			}
			return nil
		})
		require.NoError(t, err)
		err = b.svc.RemoveMember(b.ctx, p, "owner@acme.example")
		require.Equal(t, apierr.CodeConflict, code(err))
		require.Contains(t, err.Error(), "last owner")
	})
}

func TestFromContext(t *testing.T) {
	t.Parallel()
	_, err := FromContext(context.Background())
	require.Equal(t, apierr.CodeUnauthenticated, code(err))
	got, err := FromContext(auth.WithPrincipal(context.Background(), owner("acme")))
	require.NoError(t, err)
	require.Equal(t, "acme", got)
}

func TestSSOConnectionRules(t *testing.T) {
	t.Parallel()
	c := &SSOConnection{AllowedDomains: []string{"acme.example"}, RoleClaim: "groups",
		RoleMapping: map[string]string{"eng": "editor", "ops": "admin", "bogus": "owner", "all": "viewer", "fin": "approver"}}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"single value", map[string]any{"groups": "eng"}, auth.RoleEditor},
		{"highest wins", map[string]any{"groups": []any{"eng", "ops"}}, auth.RoleAdmin},
		{"owner is never mapped", map[string]any{"groups": "bogus"}, ""},
		// The matrix ranks: approver covers viewer; editor and approver
		// cover neither other, and editor allows more.
		{"approver above viewer", map[string]any{"groups": []any{"fin", "all"}}, auth.RoleApprover},
		{"editor before approver", map[string]any{"groups": []any{"fin", "eng"}}, auth.RoleEditor},
		{"no claim", map[string]any{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, c.MapRole(tc.claims)) })
	}
	require.True(t, c.DomainAllowed("a@ACME.example"))
	require.False(t, c.DomainAllowed("a@acme.example.evil"))
	require.True(t, (*SSOConnection)(nil).DomainAllowed("a@anything.example"))
}
