package e2e_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
)

// TestAPIKeysCLI drives `warden apikeys` against a real control plane:
// create prints the secret once, the new key works, ls never shows a
// secret, revoke stops the key at once, and refusals map to exit codes.
func TestAPIKeysCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := startControlPlane(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	as := func(token string, args ...string) result {
		args = append(args, "--server", cp.url, "--token", token)
		return run(ctx, map[string]string{clientconfig.EnvHome: cp.home}, "", args...)
	}

	r := cp.run(ctx, "", "apikeys", "create", "ci-editor", "--role", "editor", "-n", "default", "--expires-in", "720h")
	require.Equal(t, 0, r.code, r.String())
	secret := strings.TrimSpace(r.stdout)
	require.True(t, strings.HasPrefix(secret, "wk_"), r.String())
	require.NotContains(t, secret, "\n", "stdout holds only the secret")
	require.Contains(t, r.stderr, "cannot be shown again")
	require.Contains(t, r.stderr, "role editor")

	// The new key works with the CLI.
	r = as(secret, "get", "agents")
	require.Equal(t, 0, r.code, r.String())

	// -o json prints the whole key, secret included, once.
	r = cp.run(ctx, "", "apikeys", "create", "auditor", "--role", "viewer", "-n", "*", "-o", "json")
	require.Equal(t, 0, r.code, r.String())
	var created map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &created), r.stdout)
	require.Equal(t, "*", created["namespace"])
	require.True(t, strings.HasPrefix(created["secret"].(string), "wk_"))

	// ls shows the keys, never a secret.
	r = cp.run(ctx, "", "apikeys", "ls")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "ci-editor")
	require.Contains(t, r.stdout, "auditor")
	require.NotContains(t, r.stdout, "wk_")
	r = cp.run(ctx, "", "apikeys", "ls", "-o", "json")
	require.Equal(t, 0, r.code, r.String())
	require.NotContains(t, r.stdout, "wk_")
	var list struct {
		Items []struct{ ID, Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	id := ""
	for _, k := range list.Items {
		if k.Name == "ci-editor" {
			id = k.ID
		}
	}
	require.NotEmpty(t, id, r.stdout)

	// Refusals and their exit codes.
	r = as(secret, "apikeys", "create", "x", "--role", "viewer")
	require.Equal(t, 4, r.code, "an editor may not create keys: %s", r)
	r = cp.run(ctx, "", "apikeys", "create", "ci-editor", "--role", "viewer")
	require.Equal(t, 7, r.code, "duplicate name: %s", r)
	r = cp.run(ctx, "", "apikeys", "create", "y", "--role", "owner")
	require.Equal(t, 1, r.code, "owner is never minted: %s", r)
	require.Contains(t, r.stderr, "InvalidRequest")
	r = cp.run(ctx, "", "apikeys", "create")
	require.Equal(t, 2, r.code, "NAME is required: %s", r)

	// Revoke: the key is refused at once.
	r = cp.run(ctx, "", "apikeys", "revoke", id)
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "ci-editor")
	r = as(secret, "get", "agents")
	require.Equal(t, 5, r.code, "a revoked key is unauthenticated: %s", r)
	r = cp.run(ctx, "", "apikeys", "ls")
	require.Regexp(t, `ci-editor\s+default\s+editor\s+-\s+revoked`, r.stdout)
	r = cp.run(ctx, "", "apikeys", "revoke", "no-such-id")
	require.Equal(t, 3, r.code, r.String())
}
