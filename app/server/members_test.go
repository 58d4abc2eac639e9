package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

// TestMembersAPI changes roles over /v1/members as the console does:
// owners list and promote, the last owner cannot be demoted (409), a
// namespace admin may not grant ownership, another tenant's owner sees
// none of it, and every change is audited.
func TestMembersAPI(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))
			ctx := context.Background()
			now := time.Now().UTC()
			require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
				for _, m := range []store.Member{
					{Email: "ann@acme.example", Owner: true, Status: store.MemberActive},
					{Email: "bob@acme.example", Status: store.MemberInvited},
				} {
					m.Tenant, m.CreatedAt = server.LocalTenant, now
					if err := tx.MemberUpsert(ctx, m); err != nil {
						return err
					}
				}
				return nil
			}))
			kr := createKey(t, b, b.key, `{"name":"ns-admin","namespace":"default","role":"admin"}`)
			require.Equal(t, http.StatusCreated, kr.status, string(kr.body))
			admin := kr.json(t)["secret"].(string)
			otherOwner := newTenant(t, b.store, "tenant-b")
			role := func(key, email, body string) response {
				return b.doAs(t, key, http.MethodPost, "/v1/members/"+email+"/role", "application/json", []byte(body))
			}

			for _, step := range []struct {
				name   string
				key    string
				email  string
				body   string
				status int
				code   string
				owner  bool
				roles  []api.MemberRole
			}{
				{name: "an admin binds a namespace role", key: admin, email: "bob@acme.example", body: `{"role":"approver"}`, status: http.StatusOK,
					roles: []api.MemberRole{{Namespace: "default", Role: "approver"}}},
				{name: "an admin may not grant ownership", key: admin, email: "bob@acme.example", body: `{"role":"owner"}`,
					status: http.StatusForbidden, code: "Forbidden"},
				{name: "the last owner cannot be demoted", key: b.key, email: "ann@acme.example", body: `{"role":"viewer"}`,
					status: http.StatusConflict, code: "Conflict"},
				{name: "another tenant's owner finds nobody", key: otherOwner, email: "bob@acme.example", body: `{"role":"owner"}`,
					status: http.StatusNotFound, code: "NotFound"},
				{name: `"*" is not a namespace`, key: b.key, email: "bob@acme.example", body: `{"role":"admin","namespace":"*"}`,
					status: http.StatusBadRequest, code: "InvalidRequest"},
				{name: "unknown fields", key: b.key, email: "bob@acme.example", body: `{"role":"admin","scope":"all"}`,
					status: http.StatusBadRequest, code: "InvalidRequest"},
				{name: "an owner grants ownership", key: b.key, email: "bob@acme.example", body: `{"role":"owner"}`, status: http.StatusOK,
					owner: true, roles: []api.MemberRole{{Namespace: "default", Role: "approver"}}},
				{name: "with two owners, one steps down", key: b.key, email: "ann@acme.example", body: `{"role":"editor","namespace":"default"}`,
					status: http.StatusOK, roles: []api.MemberRole{{Namespace: "default", Role: "editor"}}},
				{name: "now bob is the last owner", key: b.key, email: "bob@acme.example", body: `{"role":"viewer"}`,
					status: http.StatusConflict, code: "Conflict"},
			} {
				r := role(step.key, step.email, step.body)
				require.Equal(t, step.status, r.status, "%s: %s", step.name, r.body)
				if step.code != "" {
					require.Equal(t, step.code, errorCode(t, r), step.name)
					continue
				}
				var m api.Member
				require.NoError(t, json.Unmarshal(r.body, &m))
				require.Equal(t, step.email, m.Email, step.name)
				require.Equal(t, step.owner, m.Owner, step.name)
				require.Equal(t, step.roles, m.Roles, step.name)
			}

			r := b.do(t, http.MethodGet, "/v1/members", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			var list api.MemberList
			require.NoError(t, json.Unmarshal(r.body, &list))
			got := map[string]bool{}
			for _, m := range list.Items {
				got[m.Email] = m.Owner
			}
			require.Equal(t, map[string]bool{"ann@acme.example": false, "bob@acme.example": true}, got)
			r = b.do(t, http.MethodGet, "/v1/members/BOB@acme.example", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			require.Contains(t, string(r.body), `"email":"bob@acme.example"`)

			for _, who := range []struct{ name, key, path string }{
				{"an admin lists", admin, "/v1/members"},
				{"another tenant lists", otherOwner, "/v1/members/bob@acme.example"},
			} {
				r := b.doAs(t, who.key, http.MethodGet, who.path, "", nil)
				require.NotEqual(t, http.StatusOK, r.status, who.name)
				require.NotContains(t, string(r.body), "ann@acme.example", who.name)
			}

			var recs []string
			require.NoError(t, b.store.View(ctx, server.LocalTenant, func(ctx context.Context, r store.Reader) error {
				list, err := r.AuditList(ctx, store.AuditListParams{Verb: auth.VerbPatch, Limit: 100})
				for _, rec := range list {
					recs = append(recs, rec.Resource+" "+string(rec.Outcome))
				}
				return err
			}))
			require.Contains(t, recs, "members/bob@acme.example denied")
			require.Contains(t, recs, "members/ann@acme.example failed")
			require.Contains(t, recs, "members/ann@acme.example allowed")
		})
	}
}
