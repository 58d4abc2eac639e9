package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/sqlite"
)

// The audit log stays append-only in the file itself: a DELETE goes
// through only for the records behind the tenant's checkpoint, and the
// checkpoint only moves forward.
func TestAuditLogDeletesOnlyBehindCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	var recs []audit.Record
	for _, tenant := range []string{"acme", "globex"} {
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			for range 4 {
				r, err := tx.AuditInsert(ctx, audit.Record{Actor: "alice", Verb: "get", Outcome: audit.OutcomeAllowed})
				if err != nil {
					return err
				}
				recs = append(recs, r)
			}
			return nil
		}))
	}
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(`DELETE FROM audit_log WHERE tenant_id = 'acme' AND seq = 1`)
	require.ErrorContains(t, err, "append-only", "no checkpoint, no delete")

	require.NoError(t, s.Update(ctx, "acme", func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditCut(ctx, audit.Checkpoint{Tenant: "acme", Seq: 2, Hash: recs[1].Hash, Time: recs[1].Time, Seal: []byte("seal")})
		return err
	}))
	_, err = db.Exec(`DELETE FROM audit_log WHERE tenant_id = 'acme' AND seq = 3`)
	require.ErrorContains(t, err, "append-only", "a record after the checkpoint stays")
	_, err = db.Exec(`DELETE FROM audit_log WHERE tenant_id = 'globex' AND seq = 1`)
	require.ErrorContains(t, err, "append-only", "another tenant's checkpoint does not count")
	_, err = db.Exec(`UPDATE audit_checkpoints SET seq = 1 WHERE tenant_id = 'acme'`)
	require.ErrorContains(t, err, "only moves forward")
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&n))
	require.Equal(t, 6, n)
}
