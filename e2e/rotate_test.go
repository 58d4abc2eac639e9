package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
)

// TestRotateMasterKey stores a Secret, stops Warden, rotates the master key,
// starts Warden again and proves the value still opens under the new key: a
// diff with the same value is unchanged, with another value it is not.
func TestRotateMasterKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	vars := map[string]string{clientconfig.EnvHome: home}
	const doc = "apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: stripe\nspec:\n  data:\n    apiKey: sk-live-rotate-me\n"

	up := startUp(t, home)
	r := run(ctx, vars, doc, "apply", "-f", "-")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, 0, up.stop())

	keyFile := filepath.Join(home, "master.key")
	before, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	r = run(ctx, vars, "", "secrets", "rotate-master-key")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "re-encrypted 1 value(s) of 1 secret(s)")
	after, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.NotEqual(t, string(before), string(after))
	previous, err := os.ReadFile(keyFile + ".previous")
	require.NoError(t, err)
	require.Equal(t, string(before), string(previous))
	for _, f := range []string{keyFile, keyFile + ".previous"} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}

	up = startUp(t, home)
	r = run(ctx, vars, doc, "diff", "-f", "-", "--server", up.url)
	require.Equal(t, 0, r.code, "the value must still open under the new key: %s", r.String())
	r = run(ctx, vars, strings.Replace(doc, "sk-live-rotate-me", "sk-live-other", 1), "diff", "-f", "-", "--server", up.url)
	require.Equal(t, 1, r.code, r.String())
	require.NotContains(t, r.stdout, "sk-live")

	require.Equal(t, 0, up.stop())

	// A second rotation works the same way from the installed key.
	r = run(ctx, vars, "", "secrets", "rotate-master-key")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "re-encrypted 1 value(s)")
}
