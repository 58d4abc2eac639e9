package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// newTenant creates a second tenant with a default namespace and an owner
// API key, directly in the store, and returns the key.
func newTenant(t *testing.T, st store.Store, tenant string) string {
	t.Helper()
	secret, hash, err := auth.NewAPIKeySecret()
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		ns := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: "default"}, Spec: map[string]any{}}
		if _, err := tx.ResourceCreate(ctx, ns); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "owner", Tenant: tenant, Name: "owner", SecretHash: hash,
			Namespace: auth.AllNamespaces, Role: auth.RoleOwner, CreatedAt: time.Now()})
	}))
	return secret
}

// TestTenantIsolation attacks tenant A's data with tenant B's credential on
// every verb: nothing of A is visible to B and nothing of A changes.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := setup(t, mk(t))
			require.Equal(t, http.StatusOK, a.apply(t, fleet(t)).status)
			bKey := newTenant(t, a.store, "tenant-b")
			asB := func(method, path, ct string, body []byte) response {
				return a.doAs(t, bKey, method, path, ct, body)
			}

			// B's own namespace is empty: A's agents do not show.
			r := asB(http.MethodGet, "/v1/namespaces/default/agents", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			require.Empty(t, r.json(t)["items"])
			r = asB(http.MethodGet, "/v1/namespaces", "", nil)
			require.Equal(t, http.StatusOK, r.status)
			require.Len(t, r.json(t)["items"], 1)

			attacks := []struct {
				name, method, path, ct, body string
			}{
				{"get", http.MethodGet, "/v1/namespaces/default/agents/support-bot", "", ""},
				{"get manifest", http.MethodGet, "/v1/namespaces/default/compiledagentmanifests/support-bot-g1", "", ""},
				{"patch", http.MethodPatch, "/v1/namespaces/default/agents/support-bot", "application/merge-patch+json", `{"spec":{"systemPrompt":"pwned"}}`},
				{"delete", http.MethodDelete, "/v1/namespaces/default/tools/stripe.refund", "", ""},
				{"put status", http.MethodPut, "/v1/namespaces/default/agents/support-bot/status", "application/json", `{"status":{"compiledManifest":"x"}}`},
				{"get tenant", http.MethodGet, "/v1/tenants/default", "", ""},
			}
			for _, at := range attacks {
				r := asB(at.method, at.path, at.ct, []byte(at.body))
				require.Equal(t, http.StatusNotFound, r.status, "%s: %s", at.name, r.body)
				require.NotContains(t, string(r.body), "support-bot\",", at.name)
			}

			// A continue token of tenant A is refused in tenant B.
			page := a.do(t, http.MethodGet, "/v1/namespaces/default/tools?limit=2", "", nil).json(t)
			tok := page["metadata"].(map[string]any)["continue"].(string)
			r = asB(http.MethodGet, "/v1/namespaces/default/tools?limit=2&continue="+tok, "", nil)
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))

			// B's watch never carries A's changes; B's own do arrive.
			ch := openWatchAs(t, a, bKey, "")
			require.Equal(t, "BOOKMARK", (<-ch).Type)
			require.Equal(t, http.StatusOK, a.do(t, http.MethodPatch, "/v1/namespaces/default/agents/support-bot", "application/merge-patch+json", []byte(`{"spec":{"systemPrompt":"A only"}}`)).status)
			require.Equal(t, http.StatusOK, a.doAs(t, bKey, http.MethodPost, "/v1/resources/apply", "application/yaml", []byte(fmt.Sprintf(toolDoc, "b.own_tool"))).status)
			ev := next(t, ch)
			require.Equal(t, "b.own_tool", ev.Object.Metadata.Name, "the first change B sees must be its own")

			// B's audit log holds only B's calls; A's is untouched.
			r = asB(http.MethodGet, "/v1/audit?limit=1000", "", nil)
			require.Equal(t, http.StatusOK, r.status)
			for _, it := range r.json(t)["items"].([]any) {
				require.Equal(t, "tenant-b", it.(map[string]any)["tenant"])
			}

			// Nothing of A changed.
			agent := a.do(t, http.MethodGet, "/v1/namespaces/default/agents/support-bot", "", nil).json(t)
			require.Equal(t, "A only", agent["spec"].(map[string]any)["systemPrompt"])
			require.Equal(t, http.StatusOK, a.do(t, http.MethodGet, "/v1/namespaces/default/tools/stripe.refund", "", nil).status)
			require.False(t, strings.Contains(string(a.do(t, http.MethodGet, "/v1/namespaces/default/tools", "", nil).body), "b.own_tool"))
		})
	}
}
