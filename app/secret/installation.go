package secret

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/warden-dev/warden/app/store"
)

// FingerprintStore keeps the fingerprint of an installation's master key:
// the part of store.IdentityStore that CheckMasterKey and
// RecordMasterKeyRotation use.
type FingerprintStore interface {
	MasterKeyFingerprint(ctx context.Context) ([]byte, error)
	MasterKeyFingerprintSwap(ctx context.Context, old, next []byte) error
}

// CheckMasterKey makes sure k's primary master key is the one the
// installation in st was set up with. A store that has no fingerprint yet
// (a new installation, or one from before fingerprints) records k's. A
// store whose fingerprint is another key's gets no write at all, and
// CheckMasterKey returns an error wrapping ErrWrongMasterKey that says what
// to do. Servers call it before anything that would seal or replace a key.
func CheckMasterKey(ctx context.Context, st FingerprintStore, k *Keyring) error {
	mine := k.Fingerprint()
	for range 2 {
		stored, err := st.MasterKeyFingerprint(ctx)
		switch {
		case errors.Is(err, store.ErrNotFound):
			err := st.MasterKeyFingerprintSwap(ctx, nil, mine)
			if errors.Is(err, store.ErrConflict) {
				continue // another replica recorded one first: compare with it
			}
			if err != nil {
				return fmt.Errorf("record the master key's fingerprint: %w", err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("read the master key's fingerprint: %w", err)
		case slices.Equal(stored, mine):
			return nil
		default:
			return wrongKey(mine, stored)
		}
	}
	return errors.New("read the master key's fingerprint: it changed while being recorded; start again")
}

// RecordMasterKeyRotation records in st that the installation's master key
// is now next, once RotateSecrets has re-wrapped every value from old to
// next. Recording it twice is harmless. It refuses, changing nothing, when
// the stored fingerprint is neither old's nor next's.
func RecordMasterKeyRotation(ctx context.Context, st FingerprintStore, old, next *Keyring) error {
	stored, err := st.MasterKeyFingerprint(ctx)
	if errors.Is(err, store.ErrNotFound) {
		stored = nil
	} else if err != nil {
		return fmt.Errorf("read the master key's fingerprint: %w", err)
	}
	if slices.Equal(stored, next.Fingerprint()) {
		return nil
	}
	if stored != nil && !slices.Equal(stored, old.Fingerprint()) {
		return wrongKey(old.Fingerprint(), stored)
	}
	if err := st.MasterKeyFingerprintSwap(ctx, stored, next.Fingerprint()); err != nil {
		return fmt.Errorf("record the new master key's fingerprint: %w", err)
	}
	return nil
}

func wrongKey(mine, stored []byte) error {
	return fmt.Errorf("%w: this server's master key has fingerprint %s, but the store was set up with the key of fingerprint %s; "+
		"start every replica with the installation's key (%s, or %s in the data directory), or, after "+
		"`warden secrets rotate-master-key`, with the new one. Nothing was changed",
		ErrWrongMasterKey, short(mine), short(stored), EnvMasterKey, MasterKeyFileName)
}

// short names a fingerprint in messages by its first 8 bytes, in hex.
func short(fp []byte) string { return hex.EncodeToString(fp[:min(len(fp), 8)]) }
