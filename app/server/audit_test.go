package server_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

// tamperer runs SQL against the store's database with the powers of someone
// who bypasses the application: the database owner, or whoever holds the
// SQLite file.
type tamperer func(t *testing.T, stmts ...string)

func sqliteTamperer(path string) tamperer {
	return func(t *testing.T, stmts ...string) {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer db.Close()
		for _, s := range append([]string{"DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"}, stmts...) {
			_, err := db.Exec(s)
			require.NoError(t, err, s)
		}
	}
}

func postgresTamperer(url string) tamperer {
	return func(t *testing.T, stmts ...string) {
		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		for _, s := range stmts {
			_, err := conn.Exec(context.Background(), s)
			require.NoError(t, err, s)
		}
	}
}

func TestAuditVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		stmts []string
		kind  string
	}{
		{"edited", []string{"UPDATE audit_log SET outcome = 'denied' WHERE seq = 3"}, "modified"},
		{"deleted", []string{"DELETE FROM audit_log WHERE seq = 4"}, "missing"},
		{"reordered", []string{
			"UPDATE audit_log SET seq = -2 WHERE seq = 2",
			"UPDATE audit_log SET seq = 2 WHERE seq = 5",
			"UPDATE audit_log SET seq = 5 WHERE seq = -2",
		}, "modified"},
		// Removing the newest records leaves an intact chain; only the head
		// kept in the tenant's counter row shows the cut.
		{"newest removed", []string{"DELETE FROM audit_log WHERE seq > (SELECT max(seq) - 2 FROM audit_log)"}, "truncated"},
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var url string
				var tamper tamperer
				if backend == "sqlite" {
					path := filepath.Join(t.TempDir(), "w.db")
					url, tamper = "sqlite://"+path, sqliteTamperer(path)
				} else {
					url = pgtest.NewDatabase(t)
					tamper = postgresTamperer(url)
				}
				b := setup(t, url)
				for range 6 {
					require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)
				}
				r := b.do(t, http.MethodGet, "/v1/audit/verify", "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				require.Equal(t, true, r.json(t)["ok"], string(r.body))

				tamper(t, tc.stmts...)
				r = b.do(t, http.MethodGet, "/v1/audit/verify", "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				rep := r.json(t)
				require.Equal(t, false, rep["ok"], string(r.body))
				var kinds []string
				for _, p := range rep["problems"].([]any) {
					kinds = append(kinds, p.(map[string]any)["kind"].(string))
				}
				require.Contains(t, kinds, tc.kind, string(r.body))
			})
		}
	}
}

func TestAuditList(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/namespaces/default/agents/ghost", "", nil).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/tools", "", nil).status)
	r := b.do(t, http.MethodGet, "/v1/audit?verb=get&limit=10", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	items := r.json(t)["items"].([]any)
	require.Len(t, items, 1)
	rec := items[0].(map[string]any)
	require.Equal(t, "Agent/default/ghost", rec["resource"])
	require.Equal(t, "failed", rec["outcome"])
	require.Equal(t, "NotFound", rec["reason"])
	require.Equal(t, "APIKey admin: owner@*", rec["policy"], "the grant that allowed the call")
	require.Equal(t, http.StatusBadRequest, b.do(t, http.MethodGet, "/v1/audit?since=yesterday", "", nil).status)
}

// After retention cut the oldest records, the chain verifies from the
// sealed checkpoint; a checkpoint moved or removed is caught.
func TestAuditVerifyAfterRetentionCut(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		stmts []string
		kind  string
	}{
		{"intact", nil, ""},
		{"checkpoint moved forward", []string{
			"UPDATE audit_checkpoints SET seq = seq + 1, hash = (SELECT hash FROM audit_log a WHERE a.seq = audit_checkpoints.seq + 1)",
			"DELETE FROM audit_log WHERE seq = (SELECT seq FROM audit_checkpoints)",
		}, audit.ProblemCheckpoint},
		{"checkpoint removed", []string{"DELETE FROM audit_checkpoints"}, audit.ProblemMissing},
		{"record after the checkpoint deleted", []string{"DELETE FROM audit_log WHERE seq = (SELECT seq + 1 FROM audit_checkpoints)"}, audit.ProblemMissing},
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				var url string
				var tamper tamperer
				if backend == "sqlite" {
					path := filepath.Join(t.TempDir(), "w.db")
					url, tamper = "sqlite://"+path, sqliteTamperer(path)
				} else {
					url = pgtest.NewDatabase(t)
					tamper = postgresTamperer(url)
				}
				b := setup(t, url)
				// Audit records are kept a nanosecond: a round cuts every
				// record written before it.
				require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
					spec := map[string]any{"retention": map[string]any{"audit": "1ns"}}
					o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: server.LocalTenant})
					if errors.Is(err, store.ErrNotFound) {
						_, err = tx.ResourceCreate(ctx, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindTenant,
							Metadata: resource.ObjectMeta{Name: server.LocalTenant}, Spec: spec})
						return err
					}
					if err != nil {
						return err
					}
					o.Spec["retention"] = spec["retention"]
					_, err = tx.ResourceUpdate(ctx, o)
					return err
				}))
				for range 6 {
					require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)
				}
				require.NoError(t, b.srv.Retain(ctx))
				for range 3 {
					require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)
				}
				r := b.do(t, http.MethodGet, "/v1/audit/verify", "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				rep := r.json(t)
				require.Equal(t, true, rep["ok"], string(r.body))
				cp := rep["checkpoint"].(map[string]any)
				require.GreaterOrEqual(t, cp["seq"], float64(6), string(r.body))
				require.GreaterOrEqual(t, rep["records"], float64(3), string(r.body))
				if tc.stmts == nil {
					return
				}
				tamper(t, tc.stmts...)
				r = b.do(t, http.MethodGet, "/v1/audit/verify", "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				rep = r.json(t)
				require.Equal(t, false, rep["ok"], string(r.body))
				var kinds []string
				for _, p := range rep["problems"].([]any) {
					kinds = append(kinds, p.(map[string]any)["kind"].(string))
				}
				require.Contains(t, kinds, tc.kind, string(r.body))
			})
		}
	}
}

// TestAuditNamesTheGrant: a viewer key made admin of a namespace by a
// RoleBinding applies there, and the record names that RoleBinding, not
// the key's own role.
func TestAuditNamesTheGrant(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	r := createKey(t, b, b.key, `{"name":"ci","namespace":"default","role":"viewer"}`)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	ci := r.json(t)["secret"].(string)
	require.Equal(t, http.StatusOK, b.apply(t, `apiVersion: warden.dev/v1alpha1
kind: RoleBinding
metadata: {name: ci-admins, namespace: default}
spec:
  role: admin
  subjects: [{kind: APIKey, name: ci}]
`).status)
	agent := []byte("apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata: {name: m9, namespace: default}\nspec: {provider: openai, model: gpt-4o}\n")
	res := b.doAs(t, ci, http.MethodPost, "/v1/resources/apply", "application/yaml", agent)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	list := b.do(t, http.MethodGet, "/v1/audit?verb=apply&limit=100", "", nil)
	var found bool
	for _, it := range list.json(t)["items"].([]any) {
		rec := it.(map[string]any)
		if rec["actor"] == "apikey:ci" {
			found = true
			require.Equal(t, "RoleBinding default/ci-admins: admin@default", rec["policy"], "%v", rec)
		}
	}
	require.True(t, found, string(list.body))
}
