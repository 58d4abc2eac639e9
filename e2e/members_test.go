package e2e_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// TestMembersCLI drives `warden members` against a real control plane: ls
// shows ownership and roles, set-role binds a namespace role and grants
// ownership, and demoting the last owner exits with the conflict code.
func TestMembersCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	cp := startControlPlane(t, url)
	st, err := backend.Open(ctx, url, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		for _, m := range []store.Member{{Email: "ann@acme.example", Owner: true}, {Email: "bob@acme.example"}} {
			m.Tenant, m.Status, m.CreatedAt = server.LocalTenant, store.MemberActive, time.Now()
			if err := tx.MemberUpsert(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}))

	r := cp.run(ctx, "", "members", "set-role", "bob@acme.example", "approver", "-n", "default")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "member bob@acme.example now holds approver@default")
	r = cp.run(ctx, "", "members", "ls")
	require.Equal(t, 0, r.code, r.String())
	require.Regexp(t, `ann@acme.example\s+active\s+yes\s+-`, r.stdout)
	require.Regexp(t, `bob@acme.example\s+active\s+no\s+approver@default`, r.stdout)

	r = cp.run(ctx, "", "members", "set-role", "ann@acme.example", "viewer")
	require.Equal(t, 7, r.code, "the last owner: %s", r)
	require.Contains(t, r.stderr, "last owner")

	r = cp.run(ctx, "", "members", "set-role", "bob@acme.example", "owner", "-o", "json")
	require.Equal(t, 0, r.code, r.String())
	var m struct {
		Email string
		Owner bool
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
	require.True(t, m.Owner)
	r = cp.run(ctx, "", "members", "set-role", "ann@acme.example", "viewer")
	require.Equal(t, 0, r.code, "two owners: one may step down: %s", r)

	r = cp.run(ctx, "", "members", "set-role", "nobody@acme.example", "viewer")
	require.Equal(t, 3, r.code, "not a member: %s", r)
	r = cp.run(ctx, "", "members", "set-role", "bob@acme.example")
	require.Equal(t, 2, r.code, "ROLE is required: %s", r)
}
