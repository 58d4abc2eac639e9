package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// ContinueToken is the decoded content of a list continue token: the query
// it was issued for and the last (namespace, name) of the page it ended.
// Clients see it only as an opaque, signed string.
type ContinueToken struct {
	Kind          string `json:"k"`
	Namespace     string `json:"ns,omitempty"`
	Selector      string `json:"s,omitempty"`
	LastNamespace string `json:"ln,omitempty"`
	LastName      string `json:"lm"`
}

// maxContinueLen bounds the token text a client may send.
const maxContinueLen = 16 << 10

// continueDomain separates continue-token MACs from any other use of the key.
const continueDomain = "warden-continue-v1"

// EncodeContinue renders t as base64url(JSON payload) "." base64url(tag),
// where tag is HMAC-SHA256 under key over the payload and the tenant, so a
// token from one tenant is refused in another.
func EncodeContinue(key []byte, tenant string, t ContinueToken) string {
	payload, _ := json.Marshal(t) // a struct of strings cannot fail
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(continueMAC(key, tenant, payload))
}

// DecodeContinue verifies and decodes a token made by EncodeContinue for the
// same tenant. Any failure (encoding, MAC, payload) is ErrInvalidContinue.
// The caller still compares the token's query with the request's.
func DecodeContinue(key []byte, tenant, token string) (ContinueToken, error) {
	var t ContinueToken
	if len(token) > maxContinueLen {
		return t, fmt.Errorf("continue token too long: %w", ErrInvalidContinue)
	}
	p64, tag64, ok := strings.Cut(token, ".")
	if !ok {
		return t, fmt.Errorf("continue token is malformed: %w", ErrInvalidContinue)
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p64)
	if err != nil {
		return t, fmt.Errorf("continue token payload: %w", ErrInvalidContinue)
	}
	tag, err := enc.DecodeString(tag64)
	if err != nil {
		return t, fmt.Errorf("continue token tag: %w", ErrInvalidContinue)
	}
	if !hmac.Equal(tag, continueMAC(key, tenant, payload)) {
		return t, fmt.Errorf("continue token signature does not match: %w", ErrInvalidContinue)
	}
	if err := json.Unmarshal(payload, &t); err != nil {
		return ContinueToken{}, fmt.Errorf("continue token content: %w", ErrInvalidContinue)
	}
	if t.Kind == "" || t.LastName == "" {
		return ContinueToken{}, fmt.Errorf("continue token content is incomplete: %w", ErrInvalidContinue)
	}
	return t, nil
}

func continueMAC(key []byte, tenant string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(continueDomain))
	m.Write([]byte{0})
	m.Write([]byte(tenant))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)
}
