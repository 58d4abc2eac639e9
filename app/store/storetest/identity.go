package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

// The identity tests share one database with every other test of the
// suite (and, for global tables such as tenants and signing_keys, see
// other tests' rows), so they name everything with random suffixes and
// filter global lists down to their own rows.

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// base is a fixed, microsecond-precise instant the identity tests build
// their times from.
var base = time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)

func members(t *testing.T, s store.Store, tenant string) []store.Member {
	t.Helper()
	var out []store.Member
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.MemberList(ctx)
		return err
	}))
	return out
}

func memberGet(t *testing.T, s store.Store, tenant, email string) (*store.Member, error) {
	t.Helper()
	var out *store.Member
	err := s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.MemberGet(ctx, email)
		return err
	})
	return out, err
}

func upsertMembers(t *testing.T, s store.Store, tenant string, ms ...store.Member) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for _, m := range ms {
			if err := tx.MemberUpsert(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}))
}

func apiKeys(t *testing.T, s store.Store, tenant string) []store.APIKey {
	t.Helper()
	var out []store.APIKey
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.APIKeyList(ctx)
		return err
	}))
	return out
}

func testTenantDirectory(t *testing.T, s store.Store) {
	ctx := context.Background()
	suffix := randomSuffix()
	a, b := "dir-a-"+suffix, "dir-b-"+suffix
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: b, DisplayName: "Beta", CreatedAt: base}))
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: a, DisplayName: "Alpha"}))

	err := s.TenantCreate(ctx, store.TenantRecord{ID: a, DisplayName: "Someone else"})
	require.ErrorIs(t, err, store.ErrAlreadyExists, "tenant ids are unique across the deployment")
	require.ErrorIs(t, s.TenantCreate(ctx, store.TenantRecord{DisplayName: "no id"}), store.ErrNoTenant)

	got, err := s.TenantGet(ctx, b)
	require.NoError(t, err)
	require.Equal(t, store.TenantRecord{ID: b, DisplayName: "Beta", CreatedAt: base}, *got)
	got, err = s.TenantGet(ctx, a)
	require.NoError(t, err)
	require.Equal(t, "Alpha", got.DisplayName, "the duplicate did not overwrite the entry")
	require.False(t, got.CreatedAt.IsZero(), "CreatedAt defaults to now")

	_, err = s.TenantGet(ctx, "dir-missing-"+suffix)
	require.ErrorIs(t, err, store.ErrNotFound)

	all, err := s.TenantList(ctx)
	require.NoError(t, err)
	var mine []string
	for i, tr := range all {
		if i > 0 {
			require.Less(t, all[i-1].ID, tr.ID, "list is ordered by id")
		}
		if strings.HasSuffix(tr.ID, suffix) {
			mine = append(mine, tr.ID)
		}
	}
	require.Equal(t, []string{a, b}, mine)

	// Drivers may offer TenantDelete, to undo a failed signup.
	d, ok := s.(interface {
		TenantDelete(ctx context.Context, id string) error
	})
	if !ok {
		return
	}
	require.NoError(t, d.TenantDelete(ctx, a))
	_, err = s.TenantGet(ctx, a)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, d.TenantDelete(ctx, a), store.ErrNotFound)
	require.NoError(t, s.TenantCreate(ctx, store.TenantRecord{ID: a, DisplayName: "Alpha again"}), "the name is free again")
	_, err = s.TenantGet(ctx, b)
	require.NoError(t, err, "other entries stay")
}

func testMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	suffix := randomSuffix()
	alice, bob := "alice-"+suffix+"@example.com", "bob-"+suffix+"@example.com"
	login := base.Add(time.Hour)

	// Upper-case input is stored lower-cased; status defaults to invited.
	upsertMembers(t, s, tenant,
		store.Member{Email: strings.ToUpper(bob), Name: "Bob", InvitedBy: alice, CreatedAt: base.Add(time.Minute)},
		store.Member{Email: alice, Name: "Alice", Owner: true, Status: store.MemberActive, CreatedAt: base, LastLogin: &login},
	)
	got := members(t, s, tenant)
	require.Equal(t, []store.Member{
		{Tenant: tenant, Email: alice, Name: "Alice", Owner: true, Status: store.MemberActive, CreatedAt: base, LastLogin: &login},
		{Tenant: tenant, Email: bob, Name: "Bob", Status: store.MemberInvited, InvitedBy: alice, CreatedAt: base.Add(time.Minute)},
	}, got, "ordered by e-mail")

	m, err := memberGet(t, s, tenant, "Alice-"+suffix+"@EXAMPLE.com")
	require.NoError(t, err, "lookups are case-insensitive")
	require.Equal(t, got[0], *m)

	// An upsert updates the member and keeps its creation time; the write
	// transaction reads its own writes.
	bobLogin := base.Add(2 * time.Hour)
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.MemberUpsert(ctx, store.Member{Email: bob, Name: "Robert", Status: store.MemberActive,
			InvitedBy: alice, CreatedAt: base.Add(time.Hour), LastLogin: &bobLogin}))
		m, err := tx.MemberGet(ctx, bob)
		require.NoError(t, err)
		require.Equal(t, "Robert", m.Name)
		require.Equal(t, store.MemberActive, m.Status)
		require.Equal(t, base.Add(time.Minute), m.CreatedAt, "created_at is kept")
		require.Equal(t, bobLogin, *m.LastLogin)
		list, err := tx.MemberList(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		return nil
	}))

	// A member cannot name another tenant; an e-mail is required.
	for _, bad := range []store.Member{{Tenant: NewTenant(), Email: "x-" + suffix + "@example.com"}, {Name: "no e-mail"}} {
		err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error { return tx.MemberUpsert(ctx, bad) })
		require.Error(t, err)
	}

	// A rolled-back delete changes nothing; a committed one removes.
	err = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.MemberDelete(ctx, bob))
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Len(t, members(t, s, tenant), 2)
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberDelete(ctx, strings.ToUpper(bob))
	}))
	_, err = memberGet(t, s, tenant, bob)
	require.ErrorIs(t, err, store.ErrNotFound)
	err = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, bob) })
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, members(t, s, tenant), 1)
}

// errRollback makes an Update roll back.
var errRollback = errors.New("roll back")

func testMembershipsByEmail(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b, c := NewTenant(), NewTenant(), NewTenant()
	email := "carol-" + randomSuffix() + "@example.com"
	upsertMembers(t, s, a, store.Member{Email: email, Name: "Carol", Owner: true, Status: store.MemberActive, CreatedAt: base})
	upsertMembers(t, s, b, store.Member{Email: strings.ToUpper(email), Name: "Carol B", InvitedBy: "dave@example.com", CreatedAt: base})
	upsertMembers(t, s, c, store.Member{Email: "someone-else-" + email, CreatedAt: base})

	got, err := s.MembershipsByEmail(ctx, strings.ToUpper(email))
	require.NoError(t, err)
	want := []store.Member{
		{Tenant: a, Email: email, Name: "Carol", Owner: true, Status: store.MemberActive, CreatedAt: base},
		{Tenant: b, Email: email, Name: "Carol B", Status: store.MemberInvited, InvitedBy: "dave@example.com", CreatedAt: base},
	}
	if a > b {
		want[0], want[1] = want[1], want[0]
	}
	require.Equal(t, want, got, "every tenant of the person, ordered by tenant, and nobody else")

	got, err = s.MembershipsByEmail(ctx, "nobody-"+email)
	require.NoError(t, err)
	require.Empty(t, got)

	// Removing the person from one tenant leaves the other membership.
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, email) }))
	got, err = s.MembershipsByEmail(ctx, email)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, b, got[0].Tenant)
}

func testMemberIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	email := "erin-" + randomSuffix() + "@example.com"
	upsertMembers(t, s, a, store.Member{Email: email, Name: "Erin", Owner: true, Status: store.MemberActive, CreatedAt: base})

	require.Empty(t, members(t, s, b), "B lists none of A's members")
	_, err := memberGet(t, s, b, email)
	require.ErrorIs(t, err, store.ErrNotFound, "B cannot read A's member")
	err = s.Update(ctx, b, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, email) })
	require.ErrorIs(t, err, store.ErrNotFound, "B cannot delete A's member")

	// B adding the same person creates B's own member and leaves A's alone.
	upsertMembers(t, s, b, store.Member{Email: email, Name: "Erin at B", CreatedAt: base.Add(time.Hour)})
	m, err := memberGet(t, s, a, email)
	require.NoError(t, err)
	require.Equal(t, "Erin", m.Name)
	require.True(t, m.Owner)
	require.Equal(t, base, m.CreatedAt)
	require.Len(t, members(t, s, a), 1)
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	email := "frank-" + randomSuffix() + "@example.com"
	expires := base.Add(12 * time.Hour)
	sess := store.Session{IDHash: hashSecret("cookie-a-" + a), Tenant: a, Email: strings.ToUpper(email), CSRFToken: "csrf-" + a,
		CreatedAt: base, ExpiresAt: expires}
	require.NoError(t, s.SessionInsert(ctx, sess))

	got, err := s.SessionGet(ctx, sess.IDHash, expires.Add(-time.Microsecond))
	require.NoError(t, err)
	require.Equal(t, store.Session{IDHash: sess.IDHash, Tenant: a, Email: email, CSRFToken: "csrf-" + a,
		CreatedAt: base, ExpiresAt: expires}, *got, "e-mail stored lower-cased")

	// Expiry is judged at the time the caller passes.
	for _, now := range []time.Time{expires, expires.Add(time.Second), expires.Add(24 * time.Hour)} {
		_, err := s.SessionGet(ctx, sess.IDHash, now)
		require.ErrorIs(t, err, store.ErrNotFound, "expired at %s", now)
	}
	_, err = s.SessionGet(ctx, hashSecret("unknown-"+a), base)
	require.ErrorIs(t, err, store.ErrNotFound)

	require.ErrorIs(t, s.SessionInsert(ctx, sess), store.ErrAlreadyExists)
	for _, bad := range []store.Session{
		{Tenant: a, Email: email, ExpiresAt: expires},
		{IDHash: hashSecret("no-tenant-" + a), Email: email, ExpiresAt: expires},
		{IDHash: hashSecret("no-expiry-" + a), Tenant: a, Email: email},
	} {
		require.Error(t, s.SessionInsert(ctx, bad))
	}

	// Sign-out.
	require.NoError(t, s.SessionDelete(ctx, sess.IDHash))
	_, err = s.SessionGet(ctx, sess.IDHash, base)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.SessionDelete(ctx, sess.IDHash), "deleting an unknown session is not an error")

	// Removing a member ends the person's sessions in that tenant only.
	upsertMembers(t, s, a, store.Member{Email: email, CreatedAt: base})
	upsertMembers(t, s, b, store.Member{Email: email, CreatedAt: base})
	inA := store.Session{IDHash: hashSecret("cookie-a2-" + a), Tenant: a, Email: email, CreatedAt: base, ExpiresAt: expires}
	inB := store.Session{IDHash: hashSecret("cookie-b-" + b), Tenant: b, Email: email, CreatedAt: base, ExpiresAt: expires}
	require.NoError(t, s.SessionInsert(ctx, inA))
	require.NoError(t, s.SessionInsert(ctx, inB))
	err = s.Update(ctx, b, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, "nobody-"+email) })
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error { return tx.MemberDelete(ctx, email) }))
	_, err = s.SessionGet(ctx, inA.IDHash, base)
	require.ErrorIs(t, err, store.ErrNotFound, "A's session ended with the membership")
	got, err = s.SessionGet(ctx, inB.IDHash, base)
	require.NoError(t, err, "B's session of the same person survives")
	require.Equal(t, b, got.Tenant)
}

func testAPIKeyManagement(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := NewTenant(), NewTenant()
	older := store.APIKey{ID: "k1-" + a, Name: "ci", SecretHash: hashSecret("wk_1_" + a), Namespace: "*", Role: "admin", CreatedAt: base}
	newer := store.APIKey{ID: "k2-" + a, Name: "bot", SecretHash: hashSecret("wk_2_" + a), Namespace: "dev", Role: "editor",
		Agent: "support-bot", CreatedAt: base.Add(time.Minute)}
	other := store.APIKey{ID: "k3-" + b, Name: "b", SecretHash: hashSecret("wk_3_" + b), Namespace: "*", Role: "viewer", CreatedAt: base}
	for tenant, keys := range map[string][]store.APIKey{a: {newer, older}, b: {other}} {
		require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			for _, k := range keys {
				if err := tx.APIKeyInsert(ctx, k); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	older.Tenant, newer.Tenant, other.Tenant = a, a, b

	// Names are unique per tenant; another tenant may reuse one.
	dup := store.APIKey{ID: "k4-" + a, Name: "ci", SecretHash: hashSecret("wk_4_" + a), Namespace: "*", Role: "viewer", CreatedAt: base}
	err := s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error { return tx.APIKeyInsert(ctx, dup) })
	require.ErrorIs(t, err, store.ErrAlreadyExists)
	dup.ID, dup.SecretHash = "k5-"+b, hashSecret("wk_5_"+b)
	require.NoError(t, s.Update(ctx, b, func(ctx context.Context, tx store.Tx) error { return tx.APIKeyInsert(ctx, dup) }))
	dup.Tenant = b

	// Lists are per tenant, ordered by creation time, with hashes.
	require.Equal(t, []store.APIKey{older, newer}, apiKeys(t, s, a))
	require.Equal(t, []store.APIKey{other, dup}, apiKeys(t, s, b))

	// Tenant B can neither revoke nor touch A's keys.
	err = s.Update(ctx, b, func(ctx context.Context, tx store.Tx) error { return tx.APIKeyRevoke(ctx, older.ID, base) })
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.APIKeyTouch(ctx, b, older.ID, base), store.ErrNotFound)
	require.ErrorIs(t, s.APIKeyTouch(ctx, "", older.ID, base), store.ErrNoTenant)
	got, err := s.APIKeyLookup(ctx, older.SecretHash)
	require.NoError(t, err)
	require.Nil(t, got.RevokedAt)
	require.Nil(t, got.LastUsedAt)

	// Touch moves last_used_at forward only; lookup and list return it.
	t1, t0, t2 := base.Add(time.Hour), base.Add(30*time.Minute), base.Add(2*time.Hour)
	require.NoError(t, s.APIKeyTouch(ctx, a, newer.ID, t1))
	got, err = s.APIKeyLookup(ctx, newer.SecretHash)
	require.NoError(t, err)
	require.NotNil(t, got.LastUsedAt)
	require.Equal(t, t1, *got.LastUsedAt)
	require.NoError(t, s.APIKeyTouch(ctx, a, newer.ID, t0))
	got, err = s.APIKeyLookup(ctx, newer.SecretHash)
	require.NoError(t, err)
	require.Equal(t, t1, *got.LastUsedAt, "an older touch does not move it back")
	require.NoError(t, s.APIKeyTouch(ctx, a, newer.ID, t2))
	list := apiKeys(t, s, a)
	require.Equal(t, t2, *list[1].LastUsedAt)
	require.Nil(t, list[0].LastUsedAt, "touch changes only the named key")
	require.ErrorIs(t, s.APIKeyTouch(ctx, a, "missing-"+a, t2), store.ErrNotFound)

	// A rolled-back revocation changes nothing.
	err = s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.APIKeyRevoke(ctx, older.ID, base))
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = s.APIKeyLookup(ctx, older.SecretHash)
	require.NoError(t, err)

	// Revocation takes effect at once for APIKeyLookup.
	revokedAt := base.Add(3 * time.Hour)
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error { return tx.APIKeyRevoke(ctx, older.ID, revokedAt) }))
	_, err = s.APIKeyLookup(ctx, older.SecretHash)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.APIKeyLookup(ctx, newer.SecretHash)
	require.NoError(t, err, "other keys still work")
	_, err = s.APIKeyLookup(ctx, other.SecretHash)
	require.NoError(t, err)

	// Revoking again keeps the first time; the list still shows the key.
	require.NoError(t, s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error {
		return tx.APIKeyRevoke(ctx, older.ID, revokedAt.Add(time.Hour))
	}))
	list = apiKeys(t, s, a)
	require.Len(t, list, 2)
	require.NotNil(t, list[0].RevokedAt)
	require.Equal(t, revokedAt, *list[0].RevokedAt)
	err = s.Update(ctx, a, func(ctx context.Context, tx store.Tx) error { return tx.APIKeyRevoke(ctx, "missing-"+a, base) })
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []store.APIKey{other, dup}, apiKeys(t, s, b), "B's keys are untouched")
}

func testSigningKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	suffix := randomSuffix()
	now := time.Now().UTC().Truncate(time.Microsecond)
	key := func(n string, created time.Time) store.SigningKey {
		return store.SigningKey{ID: n + "-" + suffix, PublicKey: []byte("pub-" + n), PrivateKeyEncrypted: []byte("enc-" + n), CreatedAt: created}
	}
	k1, k2, k3 := key("k1", now.Add(-3*time.Hour)), key("k2", now.Add(-2*time.Hour)), key("k3", now.Add(-time.Hour))
	for _, k := range []store.SigningKey{k2, k3, k1} {
		require.NoError(t, s.SigningKeyInsert(ctx, k))
	}
	require.ErrorIs(t, s.SigningKeyInsert(ctx, k1), store.ErrAlreadyExists)
	require.Error(t, s.SigningKeyInsert(ctx, store.SigningKey{ID: "no-keys-" + suffix}))
	require.Error(t, s.SigningKeyInsert(ctx, store.SigningKey{PublicKey: []byte("p"), PrivateKeyEncrypted: []byte("e")}))

	mine := func() []store.SigningKey {
		t.Helper()
		all, err := s.SigningKeyList(ctx)
		require.NoError(t, err)
		var out []store.SigningKey
		for _, k := range all {
			if strings.HasSuffix(k.ID, suffix) {
				out = append(out, k)
			}
		}
		return out
	}
	require.Equal(t, []store.SigningKey{k3, k2, k1}, mine(), "newest first")

	// A key retired with a verification window still lists; one whose
	// window has closed does not.
	retired, until := now.Add(-time.Minute), now.Add(time.Hour)
	require.NoError(t, s.SigningKeyRetire(ctx, k2.ID, retired, until))
	require.NoError(t, s.SigningKeyRetire(ctx, k1.ID, now.Add(-2*time.Hour), now.Add(-time.Hour)))
	got := mine()
	require.Len(t, got, 2)
	require.Equal(t, k3, got[0])
	require.Equal(t, k2.ID, got[1].ID)
	require.Equal(t, retired, *got[1].RetiredAt)
	require.Equal(t, until, *got[1].VerifyUntil)

	// Retiring again keeps the first retirement and moves the window.
	later := now.Add(2 * time.Hour)
	require.NoError(t, s.SigningKeyRetire(ctx, k2.ID, now, later))
	got = mine()
	require.Equal(t, retired, *got[1].RetiredAt)
	require.Equal(t, later, *got[1].VerifyUntil)

	require.ErrorIs(t, s.SigningKeyRetire(ctx, "missing-"+suffix, now, later), store.ErrNotFound)
	require.Error(t, s.SigningKeyRetire(ctx, k3.ID, now, now.Add(-time.Second)), "verify-until before retirement")
	require.Nil(t, mine()[0].RetiredAt, "a refused retirement changes nothing")

	testSigningKeyRotate(t, s, key)
}

// testSigningKeyRotate rotates on the keys testSigningKeys left (the only
// test that writes signing keys, which are global).
func testSigningKeyRotate(t *testing.T, s store.Store, key func(n string, created time.Time) store.SigningKey) {
	ctx := context.Background()
	active := func() []string {
		t.Helper()
		all, err := s.SigningKeyList(ctx)
		require.NoError(t, err)
		var ids []string
		for _, k := range all {
			if k.RetiredAt == nil {
				ids = append(ids, k.ID)
			}
		}
		return ids
	}
	before := active()
	require.NotEmpty(t, before)
	now := time.Now().UTC().Truncate(time.Microsecond)
	until := now.Add(10 * time.Minute)

	k4 := key("k4", now)
	require.ErrorIs(t, s.SigningKeyRotate(ctx, k4, nil, until), store.ErrConflict, "a stale view of the active keys")
	require.ErrorIs(t, s.SigningKeyRotate(ctx, k4, append(slices.Clone(before), "other"), until), store.ErrConflict)
	require.Equal(t, before, active(), "a refused rotation changes nothing")
	require.Error(t, s.SigningKeyRotate(ctx, key("k4", now), before, now.Add(-time.Second)), "verify-until before retirement")

	require.NoError(t, s.SigningKeyRotate(ctx, k4, before, until))
	require.Equal(t, []string{k4.ID}, active())
	all, err := s.SigningKeyList(ctx)
	require.NoError(t, err)
	for _, k := range all {
		if slices.Contains(before, k.ID) {
			require.Equal(t, now, *k.RetiredAt, k.ID)
			require.Equal(t, until, *k.VerifyUntil, k.ID)
		}
	}
	require.ErrorIs(t, s.SigningKeyRotate(ctx, key("k5", now), before, until), store.ErrConflict, "rotated by another replica")

	// Replicas rotating at once: one wins, the others change nothing.
	const replicas = 8
	errs := make(chan error, replicas)
	var wg sync.WaitGroup
	for n := range replicas {
		wg.Go(func() {
			errs <- s.SigningKeyRotate(ctx, key("r"+strconv.Itoa(n), now.Add(time.Second)), []string{k4.ID}, until.Add(time.Second))
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, store.ErrConflict)
	}
	require.Equal(t, 1, won)
	after := active()
	require.Len(t, after, 1)
	require.NotEqual(t, k4.ID, after[0])
}

func testMasterKeyFingerprint(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b, c := []byte("fingerprint-a"), []byte("fingerprint-b"), []byte("fingerprint-c")
	_, err := s.MasterKeyFingerprint(ctx)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.MasterKeyFingerprintSwap(ctx, a, b), store.ErrConflict, "nothing stored to swap")
	require.Error(t, s.MasterKeyFingerprintSwap(ctx, nil, nil))

	require.NoError(t, s.MasterKeyFingerprintSwap(ctx, nil, a))
	got, err := s.MasterKeyFingerprint(ctx)
	require.NoError(t, err)
	require.Equal(t, a, got)
	require.ErrorIs(t, s.MasterKeyFingerprintSwap(ctx, nil, b), store.ErrConflict, "the first fingerprint stays")
	require.ErrorIs(t, s.MasterKeyFingerprintSwap(ctx, c, b), store.ErrConflict, "not the stored one")
	got, err = s.MasterKeyFingerprint(ctx)
	require.NoError(t, err)
	require.Equal(t, a, got, "a refused swap changes nothing")

	require.NoError(t, s.MasterKeyFingerprintSwap(ctx, a, b))
	got, err = s.MasterKeyFingerprint(ctx)
	require.NoError(t, err)
	require.Equal(t, b, got)
}
