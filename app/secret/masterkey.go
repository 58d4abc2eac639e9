package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EnvMasterKey is the environment variable holding the base64 master key.
const EnvMasterKey = "WARDEN_MASTER_KEY"

// MasterKeyFileName is the key file's name under $WARDEN_HOME in local mode.
const MasterKeyFileName = "master.key"

// MasterKeySize is the size of a master key in bytes (AES-256).
const MasterKeySize = 32

// keyIDSize is the length of a master key id: the first bytes of the key's
// SHA-256.
const keyIDSize = 8

// LoadMasterKey returns the 32-byte master key: WARDEN_MASTER_KEY (base64,
// standard or URL alphabet, padded or not) when env has it, else the
// contents of keyFile (the same base64 text). A missing keyFile is created
// with mode 0600 holding a fresh random key, which is what local mode does
// with $WARDEN_HOME/master.key. Errors name the variable or the file, never
// the key.
func LoadMasterKey(env func(string) (string, bool), keyFile string) ([]byte, error) {
	if env != nil {
		if v, ok := env(EnvMasterKey); ok && strings.TrimSpace(v) != "" {
			k, err := decodeKey(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrMasterKey, EnvMasterKey, err)
			}
			return k, nil
		}
	}
	if keyFile == "" {
		return nil, fmt.Errorf("%w: %s is not set and no key file is configured", ErrMasterKey, EnvMasterKey)
	}
	b, err := os.ReadFile(keyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return createKeyFile(keyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read key file %s: %w", ErrMasterKey, keyFile, err)
	}
	k, err := decodeKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w: key file %s: %w", ErrMasterKey, keyFile, err)
	}
	return k, nil
}

// GenerateMasterKey returns a fresh random master key as base64 text, the
// form WARDEN_MASTER_KEY and key files hold.
func GenerateMasterKey() (string, error) {
	k := make([]byte, MasterKeySize)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("%w: generate: %w", ErrMasterKey, err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

func createKeyFile(path string) ([]byte, error) {
	text, err := GenerateMasterKey()
	if err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("%w: create directory of key file %s: %w", ErrMasterKey, path, err)
		}
	}
	// O_EXCL: when two processes race to create the file, the loser reads
	// the winner's key instead of overwriting it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadMasterKey(nil, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: create key file %s: %w", ErrMasterKey, path, err)
	}
	if _, err := f.WriteString(text + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: write key file %s: %w", ErrMasterKey, path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("%w: write key file %s: %w", ErrMasterKey, path, err)
	}
	return decodeKey(text)
}

func decodeKey(text string) ([]byte, error) {
	s := strings.TrimSpace(text)
	var k []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("not valid base64")
	}
	if len(k) != MasterKeySize {
		return nil, fmt.Errorf("decodes to %d bytes, want %d (generate one with: head -c 32 /dev/urandom | base64)", len(k), MasterKeySize)
	}
	return k, nil
}

// masterKey is one master key with its AES-GCM instance.
type masterKey struct {
	id          [keyIDSize]byte
	fingerprint [sha256.Size]byte
	aead        cipher.AEAD
}

// Keyring holds the master key that seals new values and, optionally,
// earlier master keys that may still open values not yet re-wrapped. It is
// safe for concurrent use.
type Keyring struct {
	primary masterKey
	all     []masterKey
}

// NewKeyring returns a keyring sealing with primary and opening values
// wrapped by primary or any of previous. Keys must be 32 bytes.
func NewKeyring(primary []byte, previous ...[]byte) (*Keyring, error) {
	p, err := newMasterKey(primary)
	if err != nil {
		return nil, err
	}
	k := &Keyring{primary: p, all: []masterKey{p}}
	for i, raw := range previous {
		m, err := newMasterKey(raw)
		if err != nil {
			return nil, fmt.Errorf("previous key %d: %w", i, err)
		}
		k.all = append(k.all, m)
	}
	return k, nil
}

func newMasterKey(raw []byte) (masterKey, error) {
	if len(raw) != MasterKeySize {
		return masterKey{}, fmt.Errorf("%w: %d bytes, want %d", ErrMasterKey, len(raw), MasterKeySize)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return masterKey{}, fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return masterKey{}, fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	m := masterKey{aead: aead}
	copy(m.id[:], MasterKeyID(raw))
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte(fingerprintLabel))
	copy(m.fingerprint[:], mac.Sum(nil))
	return m, nil
}

// fingerprintLabel is the message a master key's fingerprint is the
// HMAC-SHA256 of, keyed by the master key: a value derived from the key
// for this one purpose, which reveals nothing about it and matches no
// other value derived from it (the key id, the wrapped data keys).
const fingerprintLabel = "warden.dev/master-key-fingerprint/v1"

// Fingerprint returns the fingerprint of the keyring's primary master key:
// the HMAC-SHA256, keyed by the master key, of a fixed label. The store
// keeps it so that a server started with another master key refuses to
// start (CheckMasterKey).
func (k *Keyring) Fingerprint() []byte { return slices.Clone(k.primary.fingerprint[:]) }

// MasterKeyID returns the id of a master key: the first 8 bytes of its
// SHA-256. It identifies the key in sealed values without revealing it.
func MasterKeyID(raw []byte) []byte {
	sum := sha256.Sum256(raw)
	return sum[:keyIDSize]
}

// ID returns the hex id of the keyring's primary master key.
func (k *Keyring) ID() string { return hex.EncodeToString(k.primary.id[:]) }

func (k *Keyring) find(id []byte) (masterKey, bool) {
	for _, m := range k.all {
		if string(m.id[:]) == string(id) {
			return m, true
		}
	}
	return masterKey{}, false
}
