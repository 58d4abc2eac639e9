package tenants

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
)

func person(tenant, email string) auth.Principal {
	return auth.Principal{Tenant: tenant, Subject: "user:" + email, Email: email, Kind: auth.KindUser, Namespace: auth.AllNamespaces}
}

// TestSetRole walks the role changes a person can ask for, in order: who
// may grant and take away ownership is app/authz's decision, and the last
// owner cannot be demoted.
func TestSetRole(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b bundle) {
		_, err := b.svc.Signup(b.ctx, SignupRequest{TenantID: "acme", OwnerEmail: "owner@acme.example"})
		require.NoError(t, err)
		_, err = b.svc.Signup(b.ctx, SignupRequest{TenantID: "globex", OwnerEmail: "boss@globex.example"})
		require.NoError(t, err)
		own := person("acme", "owner@acme.example")
		_, err = b.svc.Invite(b.ctx, own, "bob@acme.example", auth.RoleAdmin, "default")
		require.NoError(t, err)
		_, err = b.svc.Invite(b.ctx, own, "cy@acme.example", auth.RoleViewer, "default")
		require.NoError(t, err)
		bob := person("acme", "bob@acme.example")

		for _, step := range []struct {
			name      string
			by        auth.Principal
			email     string
			role, ns  string
			code      string
			owner     bool
			wantRoles []NamespaceRole
		}{
			{name: "the last owner cannot be demoted", by: own, email: "owner@acme.example", role: auth.RoleViewer, code: apierr.CodeConflict},
			{name: "an admin binds a namespace role", by: bob, email: "cy@acme.example", role: auth.RoleApprover,
				wantRoles: []NamespaceRole{{"default", auth.RoleApprover}}},
			{name: "an admin may not grant ownership", by: bob, email: "cy@acme.example", role: auth.RoleOwner, code: apierr.CodeForbidden},
			{name: "an unknown role", by: own, email: "cy@acme.example", role: "superuser", code: apierr.CodeInvalidRequest},
			{name: "a stranger", by: own, email: "nobody@acme.example", role: auth.RoleViewer, code: apierr.CodeNotFound},
			{name: "a member of another tenant", by: own, email: "boss@globex.example", role: auth.RoleOwner, code: apierr.CodeNotFound},
			{name: "another tenant's owner", by: person("globex", "boss@globex.example"), email: "cy@acme.example", role: auth.RoleOwner,
				code: apierr.CodeNotFound},
			{name: "an owner grants ownership", by: own, email: "cy@acme.example", role: auth.RoleOwner, owner: true,
				wantRoles: []NamespaceRole{{"default", auth.RoleApprover}}},
			{name: "an admin may not demote an owner", by: bob, email: "cy@acme.example", role: auth.RoleViewer, code: apierr.CodeForbidden},
			{name: "with two owners, one steps down", by: own, email: "owner@acme.example", role: auth.RoleAdmin,
				wantRoles: []NamespaceRole{{"default", auth.RoleAdmin}}},
			{name: "who stepped down may not grant ownership", by: own, email: "bob@acme.example", role: auth.RoleOwner, code: apierr.CodeForbidden},
			{name: "now cy is the last owner", by: person("acme", "cy@acme.example"), email: "cy@acme.example", role: auth.RoleEditor,
				code: apierr.CodeConflict},
		} {
			m, err := b.svc.SetRole(b.ctx, step.by, step.email, step.role, step.ns)
			require.Equal(t, step.code, code(err), "%s: %v", step.name, err)
			if step.code != "" {
				continue
			}
			require.Equal(t, step.owner, m.Owner, step.name)
			require.Equal(t, step.wantRoles, m.Roles, step.name)
		}

		ms, err := b.svc.MembersWithRoles(b.ctx, person("acme", "cy@acme.example"))
		require.NoError(t, err)
		summary := map[string]string{}
		for _, m := range ms {
			summary[m.Email] = m.Summary()
		}
		require.Equal(t, map[string]string{"bob@acme.example": "admin in default", "cy@acme.example": "owner",
			"owner@acme.example": "admin in default"}, summary)
		_, err = b.svc.MembersWithRoles(b.ctx, bob)
		require.Equal(t, apierr.CodeForbidden, code(err), "only owners list members")
	})
}
