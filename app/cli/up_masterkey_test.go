package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/cli"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store/backend"
)

// TestUpRefusesAnotherMasterKey starts `up` with a master key that is not
// the one the store was set up with: it fails with a message that says so,
// before it writes anything (no tenant bootstrapped, no signing key, no
// client configuration).
func TestUpRefusesAnotherMasterKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	key := func() []byte {
		raw := make([]byte, secret.MasterKeySize)
		_, err := rand.Read(raw)
		require.NoError(t, err)
		return raw
	}
	installed, err := secret.NewKeyring(key())
	require.NoError(t, err)
	storeURL := "sqlite://" + filepath.Join(home, "warden.db")
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	require.NoError(t, secret.CheckMasterKey(ctx, st, installed))
	require.NoError(t, st.Close())

	var out, errb bytes.Buffer
	other := base64.StdEncoding.EncodeToString(key())
	env := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Now: time.Now,
		LookupEnv: func(k string) (string, bool) {
			switch k {
			case "WARDEN_HOME":
				return home, true
			case secret.EnvMasterKey:
				return other, true
			}
			return "", false
		}}
	// Bounded, in case up did start after all.
	upCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	code := cli.RunWith(upCtx, env, []string{"warden", "up", "--port", "18479", "--gateway-port", "0", "--memory-port", "0", "--router-port", "0", "--rag-port", "0"})
	require.Equal(t, cli.ExitFailure, code, errb.String())
	require.Contains(t, errb.String(), "wrong master key")
	require.Contains(t, errb.String(), "Nothing was changed")
	require.NotContains(t, out.String(), "First start")

	st, err = backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	tenants, err := st.TenantList(ctx)
	require.NoError(t, err)
	require.Empty(t, tenants, "nothing bootstrapped")
	keys, err := st.SigningKeyList(ctx)
	require.NoError(t, err)
	require.Empty(t, keys, "no signing key generated")
	fp, err := st.MasterKeyFingerprint(ctx)
	require.NoError(t, err)
	require.Equal(t, installed.Fingerprint(), fp)
}

// TestRotateMasterKeyMovesTheFingerprint rotates the key file's master key
// with `secrets rotate-master-key`: the store then expects the new key, and
// a rotation from a key the store was not set up with is refused.
func TestRotateMasterKeyMovesTheFingerprint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	keyFile := filepath.Join(home, secret.MasterKeyFileName)
	run := func(env map[string]string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		e := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Now: time.Now,
			LookupEnv: func(k string) (string, bool) {
				if k == "WARDEN_HOME" {
					return home, true
				}
				v, ok := env[k]
				return v, ok
			}}
		return cli.RunWith(ctx, e, append([]string{"warden"}, args...)), errb.String()
	}
	keyringOf := func() *secret.Keyring {
		raw, err := secret.LoadMasterKey(nil, keyFile)
		require.NoError(t, err)
		k, err := secret.NewKeyring(raw)
		require.NoError(t, err)
		return k
	}
	fingerprint := func() []byte {
		st, err := backend.Open(ctx, "sqlite://"+filepath.Join(home, "warden.db"), backend.Options{})
		require.NoError(t, err)
		defer func() { _ = st.Close() }()
		fp, err := st.MasterKeyFingerprint(ctx)
		require.NoError(t, err)
		return fp
	}
	old := keyringOf() // creates the key file, as up's first start does
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(home, "warden.db"), backend.Options{})
	require.NoError(t, err)
	require.NoError(t, secret.CheckMasterKey(ctx, st, old))
	require.NoError(t, st.Close())

	code, stderr := run(nil, "secrets", "rotate-master-key")
	require.Equal(t, cli.ExitOK, code, stderr)
	current := keyringOf()
	require.NotEqual(t, old.ID(), current.ID())
	require.Equal(t, current.Fingerprint(), fingerprint())

	other, err := secret.GenerateMasterKey()
	require.NoError(t, err)
	next, err := secret.GenerateMasterKey()
	require.NoError(t, err)
	code, stderr = run(map[string]string{secret.EnvMasterKey: other, "WARDEN_MASTER_KEY_NEW": next}, "secrets", "rotate-master-key")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, stderr, "wrong master key")
	require.Equal(t, current.Fingerprint(), fingerprint(), "a refused rotation changes nothing")
}
