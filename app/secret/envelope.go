package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// Sealed format, version 1 (all lengths in bytes):
//
//	version (1) | master key id (8) | wrap nonce (12) | wrapped data key (32+16)
//	| data nonce (12) | ciphertext + GCM tag (n+16)
//
// The data key is wrapped by the master key with the first 9 bytes
// (version and master key id) as associated data, so a wrapped key cannot
// be relabelled with another key id. The value is encrypted by the data key
// with the version byte and the caller's context (Context) as associated
// data, so it cannot be moved to another place. Rewrap replaces the first
// 69 bytes only.
const (
	formatV1     = 1
	nonceSize    = 12
	tagSize      = 16
	dataKeySize  = 32
	headerSize   = 1 + keyIDSize
	wrappedSize  = dataKeySize + tagSize
	dataNonceOff = headerSize + nonceSize + wrappedSize
	minSealedLen = dataNonceOff + nonceSize + tagSize
)

// Context returns associated data naming where a value lives, built from
// length-prefixed parts so that ("a/b","c") and ("a","b/c") differ.
func Context(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += 4 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// SecretContext is the associated data of one value of a Secret resource.
func SecretContext(tenant, namespace, name, key string) []byte {
	return Context("warden.dev/Secret", tenant, namespace, name, key)
}

// Seal encrypts plaintext under a fresh data key wrapped by the keyring's
// primary master key. context binds the result to its place: Open must be
// given the same context.
func (k *Keyring) Seal(plaintext, context []byte) ([]byte, error) {
	dek := make([]byte, dataKeySize)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("seal: data key: %w", err)
	}
	defer clear(dek)
	out := make([]byte, dataNonceOff+nonceSize, minSealedLen+len(plaintext))
	out[0] = formatV1
	copy(out[1:headerSize], k.primary.id[:])
	if err := wrap(k.primary, out, dek); err != nil {
		return nil, err
	}
	dataNonce := out[dataNonceOff : dataNonceOff+nonceSize]
	if _, err := rand.Read(dataNonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	aead, err := dataAEAD(dek)
	if err != nil {
		return nil, err
	}
	return aead.Seal(out, dataNonce, plaintext, dataAD(context)), nil
}

// Open decrypts a value sealed by Seal with the same context, using
// whichever master key of the keyring wrapped it.
func (k *Keyring) Open(sealed, context []byte) ([]byte, error) {
	dek, err := k.unwrap(sealed)
	if err != nil {
		return nil, err
	}
	defer clear(dek)
	aead, err := dataAEAD(dek)
	if err != nil {
		return nil, err
	}
	pt, err := aead.Open(nil, sealed[dataNonceOff:dataNonceOff+nonceSize], sealed[dataNonceOff+nonceSize:], dataAD(context))
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

// KeyID returns the hex id of the master key that wrapped sealed.
func KeyID(sealed []byte) (string, error) {
	if err := checkFormat(sealed); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sealed[1:headerSize]), nil
}

// Rewrap re-wraps the data key of sealed from a master key held by from to
// the primary master key of to, leaving the encrypted value untouched. A
// value already wrapped by to's primary key is returned unchanged, so a
// rotation that was interrupted can simply be run again.
func Rewrap(from, to *Keyring, sealed []byte) ([]byte, error) {
	if err := checkFormat(sealed); err != nil {
		return nil, err
	}
	if string(sealed[1:headerSize]) == string(to.primary.id[:]) {
		return sealed, nil
	}
	dek, err := from.unwrap(sealed)
	if err != nil {
		return nil, err
	}
	defer clear(dek)
	out := make([]byte, len(sealed))
	copy(out, sealed)
	copy(out[1:headerSize], to.primary.id[:])
	if err := wrap(to.primary, out, dek); err != nil {
		return nil, err
	}
	return out, nil
}

// wrap writes a fresh wrap nonce and the wrapped dek into out, whose
// header is already set.
func wrap(m masterKey, out, dek []byte) error {
	nonce := out[headerSize : headerSize+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("seal: nonce: %w", err)
	}
	m.aead.Seal(out[headerSize+nonceSize:headerSize+nonceSize], nonce, dek, out[:headerSize])
	return nil
}

func (k *Keyring) unwrap(sealed []byte) ([]byte, error) {
	if err := checkFormat(sealed); err != nil {
		return nil, err
	}
	m, ok := k.find(sealed[1:headerSize])
	if !ok {
		return nil, ErrUnknownMasterKey
	}
	dek, err := m.aead.Open(nil, sealed[headerSize:headerSize+nonceSize], sealed[headerSize+nonceSize:dataNonceOff], sealed[:headerSize])
	if err != nil {
		return nil, ErrDecrypt
	}
	return dek, nil
}

func checkFormat(sealed []byte) error {
	if len(sealed) < minSealedLen {
		return fmt.Errorf("%w: %d bytes is too short", ErrMalformed, len(sealed))
	}
	if sealed[0] != formatV1 {
		return fmt.Errorf("%w: unknown format version %d", ErrMalformed, sealed[0])
	}
	return nil
}

func dataAEAD(dek []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(dek)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return cipher.NewGCM(block)
}

func dataAD(context []byte) []byte {
	ad := make([]byte, 0, 1+len(context))
	ad = append(ad, formatV1)
	return append(ad, context...)
}
