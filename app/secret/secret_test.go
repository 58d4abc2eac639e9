package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

func newKeyring(t *testing.T, previous ...[]byte) (*Keyring, []byte) {
	t.Helper()
	text, err := GenerateMasterKey()
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(text)
	require.NoError(t, err)
	k, err := NewKeyring(raw, previous...)
	require.NoError(t, err)
	return k, raw
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, _ := newKeyring(t)
	other, _ := newKeyring(t)
	ctx := SecretContext("acme", "default", "zendesk", "token")
	plaintext := []byte("sk-live-very-secret-value")
	sealed, err := k.Seal(plaintext, ctx)
	require.NoError(t, err)

	tests := []struct {
		name    string
		keyring *Keyring
		sealed  func() []byte
		context []byte
		wantErr error
	}{
		{name: "round trip", keyring: k, sealed: func() []byte { return sealed }, context: ctx},
		{name: "wrong master key", keyring: other, sealed: func() []byte { return sealed }, context: ctx, wantErr: ErrUnknownMasterKey},
		{name: "moved to another secret name", keyring: k, sealed: func() []byte { return sealed }, context: SecretContext("acme", "default", "github", "token"), wantErr: ErrDecrypt},
		{name: "moved to another key", keyring: k, sealed: func() []byte { return sealed }, context: SecretContext("acme", "default", "zendesk", "password"), wantErr: ErrDecrypt},
		{name: "moved to another namespace", keyring: k, sealed: func() []byte { return sealed }, context: SecretContext("acme", "prod", "zendesk", "token"), wantErr: ErrDecrypt},
		{name: "moved to another tenant", keyring: k, sealed: func() []byte { return sealed }, context: SecretContext("globex", "default", "zendesk", "token"), wantErr: ErrDecrypt},
		{name: "truncated", keyring: k, sealed: func() []byte { return sealed[:minSealedLen-1] }, context: ctx, wantErr: ErrMalformed},
		{name: "unknown version", keyring: k, sealed: func() []byte { c := bytes.Clone(sealed); c[0] = 9; return c }, context: ctx, wantErr: ErrMalformed},
		{name: "relabelled key id", keyring: k, sealed: func() []byte { c := bytes.Clone(sealed); c[1] ^= 1; return c }, context: ctx, wantErr: ErrUnknownMasterKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.keyring.Open(tt.sealed(), tt.context)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, got)
				require.NotContains(t, err.Error(), string(plaintext))
				return
			}
			require.NoError(t, err)
			require.Equal(t, plaintext, got)
		})
	}
}

func TestTamperEveryByte(t *testing.T) {
	t.Parallel()
	k, _ := newKeyring(t)
	ctx := SecretContext("acme", "default", "s", "k")
	sealed, err := k.Seal([]byte("value"), ctx)
	require.NoError(t, err)
	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			c := bytes.Clone(sealed)
			c[i] ^= bit
			_, err := k.Open(c, ctx)
			require.Error(t, err, "flipping bit %#x of byte %d must be detected", bit, i)
		}
	}
}

func TestSealedFormNeverHoldsPlaintext(t *testing.T) {
	t.Parallel()
	k, raw := newKeyring(t)
	plaintext := []byte(strings.Repeat("hunter2-", 8))
	a, err := k.Seal(plaintext, Context("x"))
	require.NoError(t, err)
	b, err := k.Seal(plaintext, Context("x"))
	require.NoError(t, err)
	require.NotEqual(t, a, b, "fresh data key and nonce per value")
	for _, s := range [][]byte{a, b, []byte(base64.StdEncoding.EncodeToString(a))} {
		require.False(t, bytes.Contains(s, plaintext[:8]))
		require.False(t, bytes.Contains(s, raw[:8]), "master key bytes must not appear")
	}
	require.Equal(t, byte(formatV1), a[0])
	id, err := KeyID(a)
	require.NoError(t, err)
	require.Equal(t, k.ID(), id)
}

func TestRewrap(t *testing.T) {
	t.Parallel()
	oldK, _ := newKeyring(t)
	newOnly, _ := newKeyring(t)
	ctx := Context("a", "b")
	sealed, err := oldK.Seal([]byte("v"), ctx)
	require.NoError(t, err)

	out, err := Rewrap(oldK, newOnly, sealed)
	require.NoError(t, err)
	id, err := KeyID(out)
	require.NoError(t, err)
	require.Equal(t, newOnly.ID(), id)
	pt, err := newOnly.Open(out, ctx)
	require.NoError(t, err)
	require.Equal(t, "v", string(pt))
	_, err = oldK.Open(out, ctx)
	require.ErrorIs(t, err, ErrUnknownMasterKey)

	again, err := Rewrap(oldK, newOnly, out)
	require.NoError(t, err)
	require.Equal(t, out, again, "already re-wrapped values are left alone")

}

func TestKeyringWithPreviousKeyOpensBoth(t *testing.T) {
	t.Parallel()
	oldK, oldRaw := newKeyring(t)
	_, newRaw := newKeyring(t)
	both, err := NewKeyring(newRaw, oldRaw)
	require.NoError(t, err)
	ctx := Context("x")
	s1, err := oldK.Seal([]byte("old"), ctx)
	require.NoError(t, err)
	s2, err := both.Seal([]byte("new"), ctx)
	require.NoError(t, err)
	for s, want := range map[string][]byte{"old": s1, "new": s2} {
		pt, err := both.Open(want, ctx)
		require.NoError(t, err)
		require.Equal(t, s, string(pt))
	}
	id, _ := KeyID(s2)
	require.Equal(t, both.ID(), id, "new values are sealed with the primary key")
}

func TestLoadMasterKey(t *testing.T) {
	t.Parallel()
	good, err := GenerateMasterKey()
	require.NoError(t, err)
	envOf := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}

	t.Run("environment wins", func(t *testing.T) {
		t.Parallel()
		k, err := LoadMasterKey(envOf(map[string]string{EnvMasterKey: good}), filepath.Join(t.TempDir(), "never"))
		require.NoError(t, err)
		require.Len(t, k, MasterKeySize)
	})
	t.Run("bad environment names the variable", func(t *testing.T) {
		t.Parallel()
		_, err := LoadMasterKey(envOf(map[string]string{EnvMasterKey: "c2hvcnQ="}), "")
		require.ErrorIs(t, err, ErrMasterKey)
		require.Contains(t, err.Error(), EnvMasterKey)
		_, err = LoadMasterKey(envOf(map[string]string{EnvMasterKey: "!!!"}), "")
		require.Contains(t, err.Error(), EnvMasterKey)
	})
	t.Run("no source", func(t *testing.T) {
		t.Parallel()
		_, err := LoadMasterKey(envOf(nil), "")
		require.ErrorIs(t, err, ErrMasterKey)
		require.Contains(t, err.Error(), EnvMasterKey)
	})
	t.Run("file created 0600 and stable", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "home", MasterKeyFileName)
		k1, err := LoadMasterKey(envOf(nil), path)
		require.NoError(t, err)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		k2, err := LoadMasterKey(envOf(nil), path)
		require.NoError(t, err)
		require.Equal(t, k1, k2)
	})
	t.Run("bad file names the file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), MasterKeyFileName)
		require.NoError(t, os.WriteFile(path, []byte("too short"), 0o600))
		_, err := LoadMasterKey(envOf(nil), path)
		require.ErrorIs(t, err, ErrMasterKey)
		require.Contains(t, err.Error(), path)
	})
}

func secretDoc(ns, name string, data map[string]any) *resource.Object {
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindSecret,
		Metadata: resource.ObjectMeta{Namespace: ns, Name: name}, Spec: map[string]any{"type": "opaque", "data": data}}
}

func TestSealSecretAndResolve(t *testing.T) {
	t.Parallel()
	k, _ := newKeyring(t)
	o := secretDoc("default", "zendesk", map[string]any{"token": "tok-123", "user": "bot@example.com"})
	require.NoError(t, SealSecret(k, "acme", o))
	require.NotContains(t, o.Spec, FieldData)
	require.Equal(t, []any{"token", "user"}, o.Spec[FieldKeys])
	require.Empty(t, resource.Validate(withoutSealed(o)), "the rest of a sealed Secret validates")
	for _, v := range o.Spec[FieldSealed].(map[string]any) {
		require.NotContains(t, v, "tok-123")
	}

	r := &fakeReader{objects: map[resource.Key]*resource.Object{o.Key(): o}}
	b := NewBroker(k)
	got, err := b.Resolve(t.Context(), r, "acme", "default", "zendesk", "token")
	require.NoError(t, err)
	require.Equal(t, "tok-123", got)

	_, err = b.Resolve(t.Context(), r, "acme", "default", "zendesk", "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.Resolve(t.Context(), r, "acme", "default", "missing", "token")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.Resolve(t.Context(), r, "globex", "default", "zendesk", "token")
	require.ErrorIs(t, err, ErrDecrypt, "a value read in another tenant does not open")

	// Copying the sealed map into another Secret does not make it readable.
	moved := o.DeepCopy()
	moved.Metadata.Name = "stolen"
	r.objects[moved.Key()] = moved
	_, err = b.Resolve(t.Context(), r, "acme", "default", "stolen", "token")
	require.ErrorIs(t, err, ErrDecrypt)
	require.NotContains(t, err.Error(), "tok-123")
}

// withoutSealed drops spec.sealed, which resource.Validate does not know
// yet (the integrator adds it to the schema).
func withoutSealed(o *resource.Object) *resource.Object {
	c := o.DeepCopy()
	delete(c.Spec, FieldSealed)
	return c
}

func TestSealSecretUpdateKeepsUnchangedCiphertext(t *testing.T) {
	t.Parallel()
	k, _ := newKeyring(t)
	stored := secretDoc("default", "s", map[string]any{"a": "1", "b": "2"})
	require.NoError(t, SealSecret(k, "acme", stored))
	prev := stored.Spec[FieldSealed].(map[string]any)

	again := secretDoc("default", "s", map[string]any{"a": "1", "b": "changed"})
	require.NoError(t, SealSecretUpdate(k, "acme", again, stored))
	now := again.Spec[FieldSealed].(map[string]any)
	require.Equal(t, prev["a"], now["a"])
	require.NotEqual(t, prev["b"], now["b"])

	readBack := &resource.Object{Kind: resource.KindSecret, Metadata: stored.Metadata, Spec: map[string]any{"type": "opaque", "keys": []any{"a", "b"}}}
	require.NoError(t, SealSecretUpdate(k, "acme", readBack, stored))
	require.Equal(t, prev, readBack.Spec[FieldSealed])

	other := &resource.Object{Kind: resource.KindAgent, Spec: map[string]any{"data": map[string]any{"x": "y"}}}
	require.NoError(t, SealSecret(k, "acme", other))
	require.Contains(t, other.Spec, "data", "other kinds are untouched")

	bad := secretDoc("default", "s", map[string]any{"a": 1.0})
	require.Error(t, SealSecret(k, "acme", bad))
}

func TestRotateSecrets(t *testing.T) {
	t.Parallel()
	oldK, _ := newKeyring(t)
	newK, _ := newKeyring(t)
	st := &fakeRotationStore{tenants: map[string]map[resource.Key]*resource.Object{}}
	for _, tenant := range []string{"acme", "globex"} {
		st.tenants[tenant] = map[resource.Key]*resource.Object{}
		for _, name := range []string{"a", "b"} {
			o := secretDoc("default", name, map[string]any{"k1": tenant + name + "1", "k2": tenant + name + "2"})
			require.NoError(t, SealSecret(oldK, tenant, o))
			st.tenants[tenant][o.Key()] = o
		}
		agent := &resource.Object{Kind: resource.KindAgent, Metadata: resource.ObjectMeta{Namespace: "default", Name: "x"}}
		st.tenants[tenant][agent.Key()] = agent
	}

	res, err := RotateSecrets(t.Context(), st, oldK, newK)
	require.NoError(t, err)
	require.Equal(t, RotationResult{Tenants: 2, Secrets: 4, Values: 8}, res)

	for tenant, objs := range st.tenants {
		for key, o := range objs {
			if key.Kind != resource.KindSecret {
				continue
			}
			r := &fakeReader{objects: objs}
			v, err := NewBroker(newK).Resolve(t.Context(), r, tenant, "default", key.Name, "k1")
			require.NoError(t, err)
			require.Equal(t, tenant+key.Name+"1", v)
			_, err = NewBroker(oldK).Resolve(t.Context(), r, tenant, "default", key.Name, "k1")
			require.ErrorIs(t, err, ErrUnknownMasterKey)
			_ = o
		}
	}

	again, err := RotateSecrets(t.Context(), st, oldK, newK)
	require.NoError(t, err)
	require.Equal(t, RotationResult{Tenants: 2}, again, "a second run changes nothing")

	wrong, _ := newKeyring(t)
	other, _ := newKeyring(t)
	_, err = RotateSecrets(t.Context(), st, wrong, other)
	require.ErrorIs(t, err, ErrUnknownMasterKey)
}

// TestNoLogging is a canary: this package must never log. It has no logger
// and imports none; if someone adds one, this test fails and makes them
// think about where plaintext could go.
func TestNoLogging(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, banned := range []string{`"log"`, `"log/slog"`, `"fmt".Print`, "fmt.Print", "os.Stdout", "os.Stderr", "println("} {
			require.NotContains(t, string(b), banned, "%s must not log or print", f)
		}
	}
}

type fakeReader struct {
	store.Reader
	objects map[resource.Key]*resource.Object
}

func (r *fakeReader) ResourceGet(_ context.Context, key resource.Key) (*resource.Object, error) {
	o, ok := r.objects[key]
	if !ok {
		return nil, store.ErrNotFound
	}
	return o.DeepCopy(), nil
}

type fakeRotationStore struct {
	tenants map[string]map[resource.Key]*resource.Object
}

func (s *fakeRotationStore) TenantList(context.Context) ([]store.TenantRecord, error) {
	out := []store.TenantRecord{}
	for id := range s.tenants {
		out = append(out, store.TenantRecord{ID: id})
	}
	return out, nil
}

func (s *fakeRotationStore) Update(ctx context.Context, tenant string, fn func(ctx context.Context, tx store.Tx) error) error {
	objs, ok := s.tenants[tenant]
	if !ok {
		return store.ErrNoTenant
	}
	work := map[resource.Key]*resource.Object{}
	for k, o := range objs {
		work[k] = o.DeepCopy()
	}
	if err := fn(ctx, &fakeTx{objects: work}); err != nil {
		return err
	}
	s.tenants[tenant] = work
	return nil
}

type fakeTx struct {
	store.Tx
	objects map[resource.Key]*resource.Object
}

func (t *fakeTx) ResourceList(_ context.Context, p store.ListParams) (*store.ListResult, error) {
	res := &store.ListResult{}
	for _, o := range t.objects {
		if o.Kind == p.Kind {
			res.Items = append(res.Items, o.DeepCopy())
		}
	}
	return res, nil
}

func (t *fakeTx) ResourceUpdate(_ context.Context, o *resource.Object) (*resource.Object, error) {
	if _, ok := t.objects[o.Key()]; !ok {
		return nil, errors.New("update of a missing object")
	}
	t.objects[o.Key()] = o.DeepCopy()
	return o, nil
}

func TestValidateSealedSecret(t *testing.T) {
	t.Parallel()
	k, _ := newKeyring(t)
	o := secretDoc("default", "s", map[string]any{"a": "1"})
	require.NoError(t, SealSecret(k, "acme", o))
	// Until app/resource's Secret schema lists spec.sealed, Validate reports
	// exactly that field and nothing else; afterwards it reports nothing.
	for _, fe := range resource.Validate(o) {
		require.Equal(t, "spec.sealed", fe.Path, "%v", fe)
	}
}
