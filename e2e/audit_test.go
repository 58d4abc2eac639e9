package e2e_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// TestAuditCLI lists the audit log and verifies its chain through the CLI,
// then edits a record in the database file behind the server's back and
// checks that `warden audit verify` reports it and exits 1.
func TestAuditCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	cp := startControlPlane(t, "sqlite://"+path)
	require.Equal(t, 0, cp.run(ctx, "", "apply", "-f", "../examples/fleet/").code)
	require.Equal(t, 3, cp.run(ctx, "", "get", "agent", "nope").code)

	r := cp.run(ctx, "", "audit", "ls", "-A")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "SEQ")
	require.Contains(t, r.stdout, "apikey:admin")
	require.Contains(t, r.stdout, "failed (NotFound)")

	r = cp.run(ctx, "", "audit", "ls", "--verb", "apply", "-o", "json")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, `"verb": "apply"`)
	require.NotContains(t, r.stdout, `"verb": "get"`)

	r = cp.run(ctx, "", "audit", "verify")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "audit chain intact")

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	for _, s := range []string{"DROP TRIGGER audit_log_no_update", "UPDATE audit_log SET actor = 'someone-else' WHERE seq = 1"} {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	r = cp.run(ctx, "", "audit", "verify")
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stdout, "audit chain BROKEN")
	require.Contains(t, r.stdout, "record 1: modified")
}
