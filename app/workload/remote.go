package workload

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// jwksCache fetches a JWKS document and keeps its keys: for ttl after a
// fetch, and refetching on an unknown kid at most once per minRefetch.
// When a refetch fails the keys already known stay in use.
type jwksCache struct {
	url        string
	hc         *http.Client
	now        func() time.Time
	ttl        time.Duration
	minRefetch time.Duration
	// accept filters and converts one JWK; nil drops it.
	accept func(JWK) crypto.PublicKey

	mu        sync.Mutex
	keys      map[string]crypto.PublicKey
	fetchedAt time.Time
	triedAt   time.Time
}

func (c *jwksCache) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	k, ok := c.keys[kid]
	stale := c.keys == nil || now.Sub(c.fetchedAt) >= c.ttl
	if ok && !stale {
		return k, nil
	}
	if c.triedAt.IsZero() || now.Sub(c.triedAt) >= c.minRefetch {
		c.triedAt = now
		keys, err := c.fetch(ctx)
		if err != nil && c.keys == nil {
			return nil, err
		}
		if err == nil {
			c.keys, c.fetchedAt = keys, now
		}
		k, ok = c.keys[kid]
	}
	if !ok {
		return nil, refuse("unknown signing key")
	}
	return k, nil
}

func (c *jwksCache) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	var set JWKSet
	if err := getJSON(ctx, c.hc, c.url, &set); err != nil {
		return nil, err
	}
	keys := make(map[string]crypto.PublicKey, len(set.Keys))
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if pk := c.accept(k); pk != nil {
			keys[k.Kid] = pk
		}
	}
	return keys, nil
}

// getJSON fetches url and decodes at most 1 MiB of JSON into out.
func getJSON(ctx context.Context, hc *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: HTTP %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("fetch %s: decode: %w", url, err)
	}
	return nil
}

func acceptEd25519(k JWK) crypto.PublicKey {
	if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Alg != "" && k.Alg != AlgEdDSA) {
		return nil
	}
	x, err := b64.DecodeString(k.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil
	}
	return ed25519.PublicKey(x)
}

// acceptRSAOrP256 keeps RSA keys of at least 2048 bits and P-256 keys, the
// keys of RS256 and ES256.
func acceptRSAOrP256(k JWK) crypto.PublicKey {
	switch k.Kty {
	case "RSA":
		if k.Alg != "" && k.Alg != AlgRS256 {
			return nil
		}
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return nil
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 || pub.E < 3 {
			return nil
		}
		return pub
	case "EC":
		if k.Crv != "P-256" || (k.Alg != "" && k.Alg != AlgES256) {
			return nil
		}
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil
		}
		raw := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			return nil
		}
		return pub
	}
	return nil
}

// RemoteKeySource is the KeySource of a service that verifies workload
// tokens issued by another process: it reads the issuer's JWKS, keeps it
// for 60 s, and refetches on an unknown kid at most once per 10 s. The
// trusted issuer is the JWKS URL without "/.well-known/jwks.json".
type RemoteKeySource struct {
	issuer string
	cache  *jwksCache
}

var _ KeySource = (*RemoteKeySource)(nil)

// NewRemoteKeySource returns a key source reading jwksURL (e.g.
// "http://127.0.0.1:8080/.well-known/jwks.json") with hc (nil: a client
// with a 10 s timeout).
func NewRemoteKeySource(jwksURL string, hc *http.Client, now func() time.Time) *RemoteKeySource {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	if now == nil {
		now = time.Now
	}
	return &RemoteKeySource{
		issuer: strings.TrimSuffix(jwksURL, JWKSPath),
		cache:  &jwksCache{url: jwksURL, hc: hc, now: now, ttl: time.Minute, minRefetch: 10 * time.Second, accept: acceptEd25519},
	}
}

// Issuer returns the issuer tokens must name.
func (r *RemoteKeySource) Issuer() string { return r.issuer }

// VerificationKey returns the public key kid from the issuer's JWKS. A key
// retired by the issuer disappears from its JWKS when its window ends, so
// remote verifiers stop accepting it at most 60 s later.
func (r *RemoteKeySource) VerificationKey(ctx context.Context, kid string) (VerificationKey, error) {
	k, err := r.cache.key(ctx, kid)
	if err != nil {
		if errors.Is(err, ErrInvalidToken) {
			return VerificationKey{}, err
		}
		return VerificationKey{}, fmt.Errorf("%w: workload keys unavailable: %w", ErrInvalidToken, err)
	}
	return VerificationKey{ID: kid, Public: k.(ed25519.PublicKey)}, nil
}
