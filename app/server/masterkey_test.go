package server_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
)

func newKeyring(t *testing.T) *secret.Keyring {
	t.Helper()
	raw := make([]byte, secret.MasterKeySize)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	k, err := secret.NewKeyring(raw)
	require.NoError(t, err)
	return k
}

// A replica started with another master key than the installation's
// refuses to start, says why, and changes nothing: the signing keys stay
// as they were, and the right replica still starts and signs with them.
func TestWrongMasterKeyRefusesToStart(t *testing.T) {
	t.Parallel()
	for name, url := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := backend.Open(ctx, url(t), backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			right, wrong := newKeyring(t), newKeyring(t)

			first, err := newServer(st, right, nil)
			require.NoError(t, err)
			before, err := st.SigningKeyList(ctx)
			require.NoError(t, err)
			require.Len(t, before, 1)
			fp, err := st.MasterKeyFingerprint(ctx)
			require.NoError(t, err)
			require.Equal(t, right.Fingerprint(), fp)

			_, err = newServer(st, wrong, nil)
			require.ErrorIs(t, err, secret.ErrWrongMasterKey)
			require.Contains(t, err.Error(), "store was set up with")
			require.Contains(t, err.Error(), secret.EnvMasterKey)
			after, err := st.SigningKeyList(ctx)
			require.NoError(t, err)
			require.Equal(t, before, after, "no key generated, none retired")
			fp, err = st.MasterKeyFingerprint(ctx)
			require.NoError(t, err)
			require.Equal(t, right.Fingerprint(), fp)

			second, err := newServer(st, right, nil)
			require.NoError(t, err)
			require.NoError(t, verify(first, issue(t, second), time.Now))
		})
	}
}

// Rotating the master key records the new key's fingerprint: the new key
// starts, the old one is refused.
func TestMasterKeyRotationMovesTheFingerprint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+t.TempDir()+"/warden.db", backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	oldK, newK := newKeyring(t), newKeyring(t)
	_, err = newServer(st, oldK, nil)
	require.NoError(t, err)
	require.NoError(t, secret.RecordMasterKeyRotation(ctx, st, oldK, newK))
	require.NoError(t, secret.RecordMasterKeyRotation(ctx, st, oldK, newK), "a rerun is harmless")
	_, err = newServer(st, newK, nil)
	require.NoError(t, err)
	_, err = newServer(st, oldK, nil)
	require.ErrorIs(t, err, secret.ErrWrongMasterKey)
	require.ErrorIs(t, secret.RecordMasterKeyRotation(ctx, st, newKeyring(t), oldK), secret.ErrWrongMasterKey,
		"a rotation from a key that is not the installation's")
}

// newServer starts a replica without a gateway on st.
func newServer(st store.Store, k *secret.Keyring, now func() time.Time) (*server.Server, error) {
	return server.New(server.Config{Store: st, Keyring: k, GatewayAddr: server.GatewayOff, Now: now})
}

// issue issues a workload token with s's issuer.
func issue(t *testing.T, s *server.Server) string {
	t.Helper()
	tok, _, err := s.Issuer().Issue(context.Background(), workload.IssueParams{
		Tenant: "default", Namespace: "default", Agent: "bot", Environment: "dev", Audience: workload.AudienceToolGateway,
	})
	require.NoError(t, err)
	return tok
}

// verify verifies tok with s's issuer.
func verify(s *server.Server, tok string, now func() time.Time) error {
	_, err := workload.NewVerifier(s.Issuer(), workload.AudienceToolGateway, now).Verify(context.Background(), tok)
	return err
}
