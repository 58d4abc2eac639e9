package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

// matrixRoles are the callers of the matrix: API keys created in the store,
// each with the role and namespace scope it carries.
var matrixRoles = []struct {
	name, role, namespace string
}{
	{"viewer", auth.RoleViewer, server.DefaultNamespace},
	{"editor", auth.RoleEditor, server.DefaultNamespace},
	{"approver", auth.RoleApprover, server.DefaultNamespace},
	{"admin", auth.RoleAdmin, server.DefaultNamespace},
	{"owner", auth.RoleOwner, auth.AllNamespaces},
	// A tenant-wide admin: admin in every namespace, but not an owner.
	{"tenant-admin", auth.RoleAdmin, auth.AllNamespaces},
	// An admin of another namespace: nothing in "default".
	{"other-ns", auth.RoleAdmin, "other"},
}

const (
	matrixSecret      = "apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: matrix\n  namespace: default\nspec:\n  data:\n    token: t0k3n\n"
	matrixRoleBinding = "apiVersion: warden.dev/v1alpha1\nkind: RoleBinding\nmetadata:\n  name: matrix\n  namespace: default\nspec:\n  role: viewer\n  subjects:\n  - kind: User\n    name: someone@example.com\n"
)

// matrixRow is one endpoint call; allow lists the roles that may make it
// (docs/authz.md).
type matrixRow struct {
	name        string
	method      string
	path        string
	contentType string
	body        string
	allow       []string
}

var (
	nsReaders  = []string{"viewer", "editor", "approver", "admin", "owner", "tenant-admin"}
	nsWriters  = []string{"editor", "admin", "owner", "tenant-admin"}
	nsAdmins   = []string{"admin", "owner", "tenant-admin"}
	tenantWide = []string{"owner", "tenant-admin"}
	ownersOnly = []string{"owner"}
	everyone   = []string{"viewer", "editor", "approver", "admin", "owner", "tenant-admin", "other-ns"}
	nobody     = []string{}
)

func matrixRows() []matrixRow {
	const ns = "/v1/namespaces/default"
	yaml := "application/yaml"
	return []matrixRow{
		{name: "list environments", method: http.MethodGet, path: ns + "/environments", allow: nsReaders},
		{name: "get environment", method: http.MethodGet, path: ns + "/environments/dev", allow: nsReaders},
		{name: "patch environment", method: http.MethodPatch, path: ns + "/environments/dev", contentType: "application/merge-patch+json",
			body: `{"metadata":{"labels":{"matrix":"yes"}}}`, allow: nsWriters},
		{name: "delete environment", method: http.MethodDelete, path: ns + "/environments/absent", allow: nsWriters},
		{name: "put environment status", method: http.MethodPut, path: ns + "/environments/dev/status", contentType: "application/json",
			body: `{"status":{"matrix":"yes"}}`, allow: nsAdmins},
		{name: "get secret (metadata)", method: http.MethodGet, path: ns + "/secrets/matrix", allow: nsReaders},
		{name: "list toolcalls", method: http.MethodGet, path: ns + "/toolcalls", allow: nsReaders},
		{name: "list approvals", method: http.MethodGet, path: ns + "/approvals", allow: nsReaders},
		// System-only kinds: refused to every user whatever the role.
		{name: "patch toolcall", method: http.MethodPatch, path: ns + "/toolcalls/absent", contentType: "application/json", body: `{"spec":{}}`, allow: nobody},
		{name: "put approval status", method: http.MethodPut, path: ns + "/approvals/absent/status", contentType: "application/json", body: `{"status":{}}`, allow: nobody},
		{name: "list rolebindings", method: http.MethodGet, path: ns + "/rolebindings", allow: nsReaders},
		{name: "apply rolebinding", method: http.MethodPost, path: "/v1/resources/apply", contentType: yaml, body: matrixRoleBinding, allow: nsAdmins},
		{name: "patch rolebinding", method: http.MethodPatch, path: ns + "/rolebindings/absent", contentType: "application/json", body: `{"spec":{}}`, allow: nsAdmins},
		{name: "delete rolebinding", method: http.MethodDelete, path: ns + "/rolebindings/absent", allow: nsAdmins},
		{name: "apply secret", method: http.MethodPost, path: "/v1/resources/apply", contentType: yaml, body: matrixSecret, allow: nsWriters},
		{name: "validate secret", method: http.MethodPost, path: "/v1/resources/validate", contentType: yaml, body: matrixSecret, allow: nsWriters},
		{name: "diff secret", method: http.MethodPost, path: "/v1/resources/diff", contentType: yaml, body: matrixSecret, allow: nsReaders},
		// The change feed: every caller may watch; the stream carries only
		// the namespaces the credential reaches.
		{name: "watch", method: http.MethodGet, path: "/v1/resources?watch=true", allow: everyone},
		{name: "list namespaces", method: http.MethodGet, path: "/v1/namespaces", allow: tenantWide},
		{name: "get namespace", method: http.MethodGet, path: "/v1/namespaces/default", allow: tenantWide},
		{name: "patch namespace", method: http.MethodPatch, path: "/v1/namespaces/default", contentType: "application/merge-patch+json",
			body: `{"metadata":{"labels":{"matrix":"yes"}}}`, allow: ownersOnly},
		{name: "delete namespace", method: http.MethodDelete, path: "/v1/namespaces/absent", allow: ownersOnly},
		{name: "put namespace status", method: http.MethodPut, path: "/v1/namespaces/default/status", contentType: "application/json",
			body: `{"status":{"matrix":"yes"}}`, allow: ownersOnly},
		{name: "list tenants", method: http.MethodGet, path: "/v1/tenants", allow: tenantWide},
		// People: owners read them and grant or take away ownership;
		// a namespace role is bound by whoever may apply rolebindings there.
		{name: "list members", method: http.MethodGet, path: "/v1/members", allow: ownersOnly},
		{name: "get member", method: http.MethodGet, path: "/v1/members/absent@example.com", allow: ownersOnly},
		{name: "grant ownership", method: http.MethodPost, path: "/v1/members/absent@example.com/role", contentType: "application/json",
			body: `{"role":"owner"}`, allow: ownersOnly},
		{name: "bind a member's role", method: http.MethodPost, path: "/v1/members/absent@example.com/role", contentType: "application/json",
			body: `{"role":"viewer","namespace":"default"}`, allow: nsAdmins},
	}
}

// TestAuthzMatrix walks every control-plane endpoint × role and checks the
// outcome: allowed (any status but 403) or denied (403).
func TestAuthzMatrix(t *testing.T) {
	t.Parallel()
	for name, url := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, url(t))
			keys := map[string]string{}
			now := time.Now().UTC()
			require.NoError(t, b.store.Update(context.Background(), server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
				for _, r := range matrixRoles {
					secret, hash, err := auth.NewAPIKeySecret()
					if err != nil {
						return err
					}
					keys[r.name] = secret
					if err := tx.APIKeyInsert(ctx, store.APIKey{ID: "matrix-" + r.name, Tenant: server.LocalTenant, Name: "matrix-" + r.name,
						SecretHash: hash, Namespace: r.namespace, Role: r.role, CreatedAt: now}); err != nil {
						return err
					}
				}
				return nil
			}))
			r := b.apply(t, matrixSecret)
			require.Equal(t, http.StatusOK, r.status, string(r.body))

			for _, row := range matrixRows() {
				t.Run(row.name, func(t *testing.T) {
					for _, role := range matrixRoles {
						t.Run(role.name, func(t *testing.T) {
							status, denied, body := b.matrixCall(t, keys[role.name], row)
							want := contains(row.allow, role.name)
							require.Equal(t, !want, denied, "%s %s as %s: status %d, want allowed=%v; body: %s", row.method, row.path, role.name, status, want, body)
						})
					}
				})
			}
		})
	}
}

// matrixCall makes the call and reports whether it was refused for
// authorization: 403 Forbidden, apply, validate and diff included (their
// details.diagnostics name each refused document).
func (b *bundle) matrixCall(t *testing.T, key string, row matrixRow) (status int, denied bool, body string) {
	t.Helper()
	if strings.Contains(row.path, "watch=true") {
		return b.watchStatus(t, key, row.path)
	}
	r := b.doAs(t, key, row.method, row.path, row.contentType, []byte(row.body))
	switch r.status {
	case http.StatusForbidden:
		return r.status, true, string(r.body)
	}
	require.NotEqual(t, http.StatusUnauthorized, r.status, "the key must authenticate: %s", r.body)
	return r.status, false, string(r.body)
}

// watchStatus opens a watch stream, reads the status line and hangs up.
func (b *bundle) watchStatus(t *testing.T, key, path string) (int, bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return res.StatusCode, res.StatusCode == http.StatusForbidden, res.Header.Get("Content-Type")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
