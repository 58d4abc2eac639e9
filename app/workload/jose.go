package workload

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// MaxTokenBytes bounds the size of a token this package will parse.
const MaxTokenBytes = 8 << 10

// Algorithms.
const (
	AlgEdDSA = "EdDSA"
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
)

var b64 = base64.RawURLEncoding.Strict()

// jwsHeader is the only header shape accepted: any member other than alg,
// kid and typ (jku, jwk, x5u, x5c, crit, b64, zip, enc, …) refuses the
// token, so no header can point verification at another key or change how
// the payload is read.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ,omitempty"`
}

// jws is a compact JWS split into its parts. signingInput aliases the token.
type jws struct {
	header       jwsHeader
	signingInput string
	payload      []byte
	signature    []byte
}

// parseJWS splits and decodes a compact JWS strictly: exactly three
// non-empty parts in unpadded base64url with canonical trailing bits, a
// header of only alg, kid and typ, a JSON-object payload. It does not
// verify the signature.
func parseJWS(token string) (*jws, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse("token longer than %d bytes", MaxTokenBytes)
	}
	h, rest, ok := strings.Cut(token, ".")
	if !ok {
		return nil, refuse("not a compact JWS")
	}
	p, s, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(s, ".") || h == "" || p == "" || s == "" {
		return nil, refuse("not a compact JWS")
	}
	hb, err := b64.DecodeString(h)
	if err != nil {
		return nil, refuse("header is not base64url")
	}
	var hdr jwsHeader
	if err := decodeStrict(hb, &hdr); err != nil {
		return nil, refuse("header: %v", err)
	}
	if hdr.Kid == "" {
		return nil, refuse("header has no kid")
	}
	pb, err := b64.DecodeString(p)
	if err != nil {
		return nil, refuse("payload is not base64url")
	}
	if len(pb) == 0 || pb[0] != '{' {
		return nil, refuse("payload is not a JSON object")
	}
	sb, err := b64.DecodeString(s)
	if err != nil {
		return nil, refuse("signature is not base64url")
	}
	return &jws{header: hdr, signingInput: token[:len(h)+1+len(p)], payload: pb, signature: sb}, nil
}

// decodeStrict decodes a JSON object refusing unknown members and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	return nil
}

var errTrailing = jsonError("trailing data after the JSON object")

type jsonError string

func (e jsonError) Error() string { return string(e) }

// signEdDSA returns the compact JWS of payload signed by priv under kid.
func signEdDSA(priv ed25519.PrivateKey, kid string, payload []byte) (string, error) {
	hb, err := json.Marshal(jwsHeader{Alg: AlgEdDSA, Kid: kid, Typ: "JWT"})
	if err != nil {
		return "", err
	}
	n := b64.EncodedLen(len(hb)) + 1 + b64.EncodedLen(len(payload))
	buf := make([]byte, n, n+1+b64.EncodedLen(ed25519.SignatureSize))
	b64.Encode(buf, hb)
	buf[b64.EncodedLen(len(hb))] = '.'
	b64.Encode(buf[b64.EncodedLen(len(hb))+1:], payload)
	sig := ed25519.Sign(priv, buf)
	buf = append(buf, '.')
	buf = b64.AppendEncode(buf, sig)
	return string(buf), nil
}
