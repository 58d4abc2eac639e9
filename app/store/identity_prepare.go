package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The Prepare functions below check and default identity records the same
// way in every driver, so the drivers differ only in SQL.

// NormalizeEmail returns the stored form of an e-mail address: lower-cased.
func NormalizeEmail(email string) string { return strings.ToLower(email) }

// storedTime is t as every driver stores it: UTC, microsecond precision.
func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func storedTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := storedTime(*t)
	return &u
}

// PrepareTenant checks a directory entry and fills CreatedAt from now when
// zero.
func PrepareTenant(t TenantRecord, now time.Time) (TenantRecord, error) {
	if err := CheckTenant(t.ID); err != nil {
		return t, fmt.Errorf("create tenant: %w", err)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.CreatedAt = storedTime(t.CreatedAt)
	return t, nil
}

// PrepareMember checks a member of tenant (Member.Tenant may be empty or
// must equal tenant), lower-cases the e-mail and fills the defaults: status
// invited, CreatedAt now.
func PrepareMember(m Member, tenant string, now time.Time) (Member, error) {
	if m.Tenant != "" && m.Tenant != tenant {
		return m, fmt.Errorf("upsert member: member names tenant %q inside tenant %q", m.Tenant, tenant)
	}
	m.Tenant = tenant
	m.Email = NormalizeEmail(m.Email)
	if m.Email == "" {
		return m, errors.New("upsert member: e-mail is required")
	}
	if m.Status == "" {
		m.Status = MemberInvited
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.CreatedAt = storedTime(m.CreatedAt)
	m.LastLogin = storedTimePtr(m.LastLogin)
	return m, nil
}

// PrepareSession checks a session (id hash, tenant, e-mail and expiry are
// required), lower-cases the e-mail and fills CreatedAt from now when zero.
func PrepareSession(s Session, now time.Time) (Session, error) {
	if s.IDHash == "" {
		return s, errors.New("insert session: id hash is required")
	}
	if err := CheckTenant(s.Tenant); err != nil {
		return s, fmt.Errorf("insert session: %w", err)
	}
	s.Email = NormalizeEmail(s.Email)
	if s.Email == "" {
		return s, errors.New("insert session: e-mail is required")
	}
	if s.ExpiresAt.IsZero() {
		return s, errors.New("insert session: expiry is required")
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	s.CreatedAt = storedTime(s.CreatedAt)
	s.ExpiresAt = storedTime(s.ExpiresAt)
	return s, nil
}

// PrepareSigningKey checks a signing key (id and both keys are required)
// and fills CreatedAt from now when zero.
func PrepareSigningKey(k SigningKey, now time.Time) (SigningKey, error) {
	if k.ID == "" {
		return k, errors.New("insert signing key: id is required")
	}
	if len(k.PublicKey) == 0 || len(k.PrivateKeyEncrypted) == 0 {
		return k, fmt.Errorf("insert signing key %s: public and encrypted private key are required", k.ID)
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now
	}
	k.CreatedAt = storedTime(k.CreatedAt)
	k.RetiredAt = storedTimePtr(k.RetiredAt)
	k.VerifyUntil = storedTimePtr(k.VerifyUntil)
	return k, nil
}

// CheckRetire checks the times of SigningKeyRetire: a key cannot stop
// verifying before it stops signing.
func CheckRetire(id string, t, verifyUntil time.Time) error {
	if t.IsZero() || verifyUntil.IsZero() {
		return fmt.Errorf("retire signing key %s: retirement and verify-until times are required", id)
	}
	if verifyUntil.Before(t) {
		return fmt.Errorf("retire signing key %s: verify-until %s is before retirement %s", id,
			verifyUntil.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	return nil
}

// SameKeySet reports whether the signing key ids of a and b are the same
// set, whatever their order: the precondition of SigningKeyRotate.
func SameKeySet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[string]int, len(a))
	for _, id := range a {
		seen[id]++
	}
	for _, id := range b {
		if seen[id] == 0 {
			return false
		}
		seen[id]--
	}
	return true
}

// MetaMasterKeyFingerprint names the master key's fingerprint in the
// installation's metadata (warden_meta).
const MetaMasterKeyFingerprint = "master_key_fingerprint"
