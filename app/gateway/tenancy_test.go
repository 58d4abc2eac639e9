package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/workload"
)

// newTenant creates tenant with a default namespace and an owner key.
func newTenant(t *testing.T, st store.Store, tenant string) string {
	t.Helper()
	secret, hash, err := auth.NewAPIKeySecret()
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		ns := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: "default"}, Spec: map[string]any{}}
		if _, err := tx.ResourceCreate(ctx, ns); err != nil {
			return err
		}
		return tx.APIKeyInsert(ctx, store.APIKey{ID: "owner-" + tenant, Tenant: tenant, Name: "owner", SecretHash: hash,
			Namespace: auth.AllNamespaces, Role: auth.RoleOwner, CreatedAt: time.Now()})
	}))
	return secret
}

// TestOtherTenantsCannotTouchCallsOrApprovals attacks tenant default's
// paused call with tenant B's owner key and an agent token of B: nothing
// is visible and nothing changes.
func TestOtherTenantsCannotTouchCallsOrApprovals(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			r := e.pending(700)
			ap := approvalOf(r.name())
			bKey := newTenant(t, e.st, "tenant-b")
			bAgent, _, err := e.srv.Issuer().Issue(context.Background(), workload.IssueParams{Tenant: "tenant-b", Namespace: "default",
				Agent: "bot", Environment: "dev", Audience: workload.AudienceToolGateway})
			require.NoError(t, err)

			for _, tt := range []struct {
				name, method, url, token string
				body                     any
			}{
				{"decide", http.MethodPost, e.cpURL + "/v1/approvals/" + ap + "/decide", bKey, map[string]any{"decision": "approve"}},
				{"decide namespaced", http.MethodPost, e.cpURL + "/v1/namespaces/default/approvals/" + ap + "/decide", bKey, map[string]any{"decision": "approve"}},
				{"override", http.MethodPost, e.cpURL + "/v1/approvals/" + ap + "/override", bKey, map[string]any{"decision": "approve", "rationale": "x"}},
				{"read the call", http.MethodGet, e.cpURL + "/v1/namespaces/default/toolcalls/" + r.name(), bKey, nil},
				{"approve at the gateway", http.MethodPost, e.gwURL + "/v1/tool-calls/" + r.name() + "/approve?namespace=default", bKey, map[string]any{}},
				{"cancel as B's agent", http.MethodPost, e.gwURL + "/v1/tool-calls/" + r.name() + "/cancel", bAgent, nil},
				{"read as B's agent", http.MethodGet, e.gwURL + "/v1/tool-calls/" + r.name(), bAgent, nil},
			} {
				got := do(t, tt.method, tt.url, tt.token, tt.body, nil)
				require.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, got.status, "%s: %s", tt.name, got.raw)
			}
			list := do(t, http.MethodGet, e.cpURL+"/v1/namespaces/default/approvals", bKey, nil, nil)
			require.Empty(t, list.body["items"])
			still := e.cp(http.MethodGet, "/v1/namespaces/default/approvals/"+ap, nil)
			require.Equal(t, "pending", still.body["status"].(map[string]any)["status"])
			require.Equal(t, 0, e.tools.count("/refund"))
		})
	}
}

// TestTwoGatewaysShareOnePostgres fires the same call at two gateway
// processes sharing one database: the tool runs once.
func TestTwoGatewaysShareOnePostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	ts := newToolServer(t)
	a := newEnvOn(t, dbURL, ts)
	a.apply(fixture(ts.URL))
	b := newEnvOn(t, dbURL, ts)
	const n = 25
	var wg sync.WaitGroup
	results := make([]resp, 2*n)
	for i := range 2 * n {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.call("tickets.create", map[string]any{"title": "replicated"}, nil)
		}()
	}
	wg.Wait()
	names := map[string]bool{}
	for _, r := range results {
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		names[r.name()] = true
	}
	require.Len(t, names, 1)
	require.Equal(t, 1, ts.count("/create"), "exactly one execution across both gateways")
}

// newEnvOn starts another Warden process on an existing database.
func newEnvOn(t *testing.T, dbURL string, ts *toolServer) *env {
	t.Helper()
	st, err := backend.Open(context.Background(), dbURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return start(t, envOptions{st: st, tools: ts})
}
