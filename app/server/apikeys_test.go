package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

func createKey(t *testing.T, b *bundle, as, body string) response {
	t.Helper()
	return b.doAs(t, as, http.MethodPost, "/v1/apikeys", "application/json", []byte(body))
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))

			// The owner mints an editor key for namespace default.
			r := createKey(t, b, b.key, `{"name":"ci-editor","namespace":"default","role":"editor","expiresIn":"720h"}`)
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			require.Equal(t, "no-store", r.header.Get("Cache-Control"))
			created := r.json(t)
			require.Equal(t, "warden.dev/v1alpha1", created["apiVersion"])
			require.Equal(t, "APIKey", created["kind"])
			require.Equal(t, "ci-editor", created["name"])
			require.Equal(t, "editor", created["role"])
			require.Equal(t, "default", created["namespace"])
			require.Equal(t, "", created["agent"])
			require.NotEmpty(t, created["id"])
			require.NotNil(t, created["expiresAt"])
			exp, err := time.Parse(time.RFC3339, created["expiresAt"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, time.Now().Add(720*time.Hour), exp, time.Minute)
			secret := created["secret"].(string)
			require.True(t, strings.HasPrefix(secret, "wk_"), secret)
			require.NotContains(t, string(r.body), "secretHash")
			id := created["id"].(string)

			// The new key works on the API at once.
			require.Equal(t, http.StatusOK, b.doAs(t, secret, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)

			// The list never shows a secret or a hash; lastUsedAt is
			// recorded (in the background, throttled).
			var listed map[string]any
			require.Eventually(t, func() bool {
				r := b.do(t, http.MethodGet, "/v1/apikeys", "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				require.NotContains(t, string(r.body), secret)
				require.NotContains(t, string(r.body), "secret")
				require.NotContains(t, strings.ToLower(string(r.body)), "hash")
				body := r.json(t)
				require.Equal(t, "APIKeyList", body["kind"])
				for _, it := range body["items"].([]any) {
					if k := it.(map[string]any); k["id"] == id {
						listed = k
					}
				}
				return listed != nil && listed["lastUsedAt"] != nil
			}, 5*time.Second, 20*time.Millisecond, "the key is listed with lastUsedAt")
			require.Nil(t, listed["revokedAt"])

			// Refusals.
			cases := []struct {
				name   string
				as     string
				body   string
				status int
				code   string
			}{
				{"editor may not create keys", secret, `{"name":"x1","namespace":"default","role":"viewer"}`, 403, "Forbidden"},
				{"duplicate name", b.key, `{"name":"ci-editor","namespace":"default","role":"viewer"}`, 409, "Conflict"},
				{"unknown role", b.key, `{"name":"x2","namespace":"default","role":"superuser"}`, 400, "InvalidRequest"},
				{"owner is never minted", b.key, `{"name":"x3","namespace":"*","role":"owner"}`, 400, "InvalidRequest"},
				{"breakglass is never minted", b.key, `{"name":"x4","namespace":"default","role":"breakglass"}`, 400, "InvalidRequest"},
				{"bad name", b.key, `{"name":"Not_A_Name","namespace":"default","role":"viewer"}`, 400, "InvalidRequest"},
				{"no namespace", b.key, `{"name":"x5","role":"viewer"}`, 400, "InvalidRequest"},
				{"unknown namespace", b.key, `{"name":"x6","namespace":"nowhere","role":"viewer"}`, 404, "NotFound"},
				{"bad expiry", b.key, `{"name":"x7","namespace":"default","role":"viewer","expiresIn":"-1h"}`, 400, "InvalidRequest"},
				{"unknown field", b.key, `{"name":"x8","namespace":"default","role":"viewer","secret":"wk_mine"}`, 400, "InvalidRequest"},
				{"agent key needs one namespace", b.key, `{"name":"x9","namespace":"*","agent":"support-bot"}`, 400, "InvalidRequest"},
				{"agent must exist", b.key, `{"name":"x10","namespace":"default","agent":"ghost"}`, 404, "NotFound"},
			}
			for _, tc := range cases {
				r := createKey(t, b, tc.as, tc.body)
				require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
				require.Equal(t, tc.code, errorCode(t, r), tc.name)
			}

			// A namespace admin mints within its namespace, never above
			// its own scope.
			r = createKey(t, b, b.key, `{"name":"ns-admin","namespace":"default","role":"admin"}`)
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			nsAdmin := r.json(t)["secret"].(string)
			r = createKey(t, b, nsAdmin, `{"name":"ns-viewer","namespace":"default","role":"viewer"}`)
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			r = createKey(t, b, nsAdmin, `{"name":"tenant-admin","namespace":"*","role":"admin"}`)
			require.Equal(t, http.StatusForbidden, r.status, "minting a tenant-wide key from a namespace key: %s", r.body)
			r = createKey(t, b, nsAdmin, `{"name":"tenant-viewer","namespace":"*","role":"viewer"}`)
			require.Equal(t, http.StatusForbidden, r.status, string(r.body))
			// It lists only its namespace's keys.
			r = b.doAs(t, nsAdmin, http.MethodGet, "/v1/apikeys", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			for _, it := range r.json(t)["items"].([]any) {
				require.Equal(t, "default", it.(map[string]any)["namespace"], "%v", it)
			}
			require.NotContains(t, string(r.body), `"admin"`+`,"namespace":"*"`)

			// Revocation takes effect at once.
			r = b.do(t, http.MethodPost, "/v1/apikeys/"+id+"/revoke", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			revoked := r.json(t)
			require.NotNil(t, revoked["revokedAt"])
			require.Nil(t, revoked["secret"])
			r = b.doAs(t, secret, http.MethodGet, "/v1/namespaces/default/agents", "", nil)
			require.Equal(t, http.StatusUnauthorized, r.status, string(r.body))
			// Revoking again keeps the first time.
			r = b.do(t, http.MethodPost, "/v1/apikeys/"+id+"/revoke", "", nil)
			require.Equal(t, http.StatusOK, r.status)
			require.Equal(t, revoked["revokedAt"], r.json(t)["revokedAt"])
			require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, "/v1/apikeys/no-such-id/revoke", "", nil).status)
			// A viewer may not revoke, nor learn whether an id exists.
			r = createKey(t, b, b.key, `{"name":"a-viewer","namespace":"default","role":"viewer"}`)
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			viewer := r.json(t)["secret"].(string)
			require.Equal(t, http.StatusForbidden, b.doAs(t, viewer, http.MethodPost, "/v1/apikeys/"+id+"/revoke", "", nil).status)
			require.Equal(t, http.StatusForbidden, b.doAs(t, viewer, http.MethodPost, "/v1/apikeys/no-such-id/revoke", "", nil).status)
			require.Equal(t, http.StatusForbidden, b.doAs(t, viewer, http.MethodGet, "/v1/apikeys", "", nil).status)

			// Agent-bound keys: role agent, exchangeable for a workload
			// token.
			require.Equal(t, http.StatusOK, b.apply(t, fleet(t)).status)
			r = createKey(t, b, b.key, `{"name":"bot-key","namespace":"default","agent":"support-bot"}`)
			require.Equal(t, http.StatusCreated, r.status, string(r.body))
			bot := r.json(t)
			require.Equal(t, "agent", bot["role"])
			require.Equal(t, "support-bot", bot["agent"])
			tok := b.doAs(t, "", http.MethodPost, "/v1/auth/token", "application/json",
				[]byte(`{"grant_type":"api_key","api_key":"`+bot["secret"].(string)+`","audience":"warden:control-plane","environment":"dev"}`))
			require.Equal(t, http.StatusOK, tok.status, string(tok.body))

			// Every call was audited, with the key's name.
			var verbs []string
			require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
				recs, err := r.AuditList(ctx, store.AuditListParams{Limit: 1000})
				for _, rec := range recs {
					if strings.HasPrefix(rec.Resource, "APIKey") {
						verbs = append(verbs, rec.Verb+" "+rec.Resource+" "+rec.Outcome)
					}
				}
				return err
			}))
			require.Contains(t, verbs, "create APIKey/ci-editor allowed")
			require.Contains(t, verbs, "create APIKey/ci-editor failed", "the duplicate")
			require.Contains(t, verbs, "create APIKey/x1 denied")
			require.Contains(t, verbs, "revoke APIKey/ci-editor allowed")
			require.Contains(t, verbs, "list APIKey allowed")
		})
	}
}
