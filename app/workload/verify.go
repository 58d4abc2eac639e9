package workload

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/auth"
)

// nbfLeeway tolerates a verifier whose clock is a little behind the
// issuer's for nbf and iat. There is none for exp: a token is valid for
// exactly TokenLifetime.
const nbfLeeway = 30 * time.Second

// Verifier verifies workload tokens for one audience. It implements
// auth.Verifier. A token that verified is remembered until it expires, so
// an agent presenting the same token on every call pays for the signature
// check once.
type Verifier struct {
	keys     KeySource
	audience string
	now      func() time.Time
	cache    *tokenCache
}

var _ auth.Verifier = (*Verifier)(nil)

// NewVerifier returns a verifier of tokens from keys' issuer for audience
// (e.g. AudienceToolGateway).
func NewVerifier(keys KeySource, audience string, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{keys: keys, audience: audience, now: now, cache: newTokenCache(10000)}
}

// Accepts reports whether token looks like a workload token of this
// verifier's issuer (a compact JWS whose iss is ours), without verifying
// it, so the Authenticator can route it here.
func (v *Verifier) Accepts(token string) bool {
	if strings.Count(token, ".") != 2 || len(token) > MaxTokenBytes {
		return false
	}
	if v.cache.has(token) {
		return true
	}
	_, rest, _ := strings.Cut(token, ".")
	p, _, _ := strings.Cut(rest, ".")
	pb, err := b64.DecodeString(p)
	if err != nil {
		return false
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	return json.Unmarshal(pb, &c) == nil && c.Issuer == v.keys.Issuer()
}

// Verify checks token and returns the agent principal it names, scoped to
// the token's namespace. Every refusal wraps auth.ErrUnauthenticated.
func (v *Verifier) Verify(ctx context.Context, token string) (auth.Principal, error) {
	c, err := v.VerifyClaims(ctx, token)
	if err != nil {
		return auth.Principal{}, err
	}
	return principalOf(c), nil
}

func principalOf(c Claims) auth.Principal {
	return auth.Principal{Kind: auth.KindAgent, Tenant: c.Tenant, Namespace: c.Namespace, Role: RoleAgent,
		Agent: c.Agent, Environment: c.Environment, Subject: c.Subject}
}

// VerifyClaims checks token: EdDSA signature by a known key still inside
// its verification window, the header holding only alg, kid and typ, iss,
// aud, exp (refused at exp, no leeway), nbf and iat (30 s leeway), a
// lifetime of at most TokenLifetime and consistent workload claims.
func (v *Verifier) VerifyClaims(ctx context.Context, token string) (Claims, error) {
	now := v.now()
	if c, ok := v.cache.get(token, now); ok {
		return c, nil
	}
	j, err := parseJWS(token)
	if err != nil {
		return Claims{}, err
	}
	if j.header.Alg != AlgEdDSA {
		return Claims{}, refuse("algorithm %q is not accepted", j.header.Alg)
	}
	if j.header.Typ != "JWT" {
		return Claims{}, refuse("typ must be JWT")
	}
	k, err := v.keys.VerificationKey(ctx, j.header.Kid)
	if err != nil {
		return Claims{}, err
	}
	if !k.VerifyUntil.IsZero() && !now.Before(k.VerifyUntil) {
		return Claims{}, refuse("signing key retired")
	}
	if len(j.signature) != ed25519.SignatureSize || len(k.Public) != ed25519.PublicKeySize ||
		!ed25519.Verify(k.Public, []byte(j.signingInput), j.signature) {
		return Claims{}, refuse("bad signature")
	}
	var c Claims
	if err := json.Unmarshal(j.payload, &c); err != nil {
		return Claims{}, refuse("claims: %v", err)
	}
	if err := v.checkClaims(c, now); err != nil {
		return Claims{}, err
	}
	until := time.Unix(c.Expiry, 0)
	if !k.VerifyUntil.IsZero() && k.VerifyUntil.Before(until) {
		until = k.VerifyUntil
	}
	v.cache.put(token, c, until, now)
	return c, nil
}

func (v *Verifier) checkClaims(c Claims, now time.Time) error {
	switch {
	case c.Issuer != v.keys.Issuer():
		return refuse("issuer %q is not trusted", c.Issuer)
	case c.Audience == "" || c.Audience != v.audience:
		return refuse("token is for audience %q, not %q", c.Audience, v.audience)
	case !now.Before(time.Unix(c.Expiry, 0)):
		return refuse("token expired")
	case now.Add(nbfLeeway).Before(time.Unix(c.NotBefore, 0)) || now.Add(nbfLeeway).Before(time.Unix(c.IssuedAt, 0)):
		return refuse("token not valid yet")
	case c.Expiry <= c.IssuedAt || time.Duration(c.Expiry-c.IssuedAt)*time.Second > TokenLifetime:
		return refuse("token lifetime exceeds %s", TokenLifetime)
	case c.Tenant == "" || c.Namespace == "" || c.Agent == "" || c.ID == "":
		return refuse("tenant, namespace, agent and jti are required")
	case c.Namespace == auth.AllNamespaces:
		return refuse("a workload token is scoped to one namespace")
	case c.Subject != Subject(c.Namespace, c.Agent):
		return refuse("sub does not match namespace and agent")
	}
	return nil
}

// tokenCache remembers verified tokens until they stop being valid. The
// key is the whole token, so only the identical byte string hits.
type tokenCache struct {
	mu      sync.RWMutex
	max     int
	entries map[string]cacheEntry
}

type cacheEntry struct {
	claims Claims
	until  time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: make(map[string]cacheEntry)}
}

func (t *tokenCache) has(token string) bool {
	t.mu.RLock()
	_, ok := t.entries[token]
	t.mu.RUnlock()
	return ok
}

func (t *tokenCache) get(token string, now time.Time) (Claims, bool) {
	t.mu.RLock()
	e, ok := t.entries[token]
	t.mu.RUnlock()
	if !ok || !now.Before(e.until) || now.Add(nbfLeeway).Before(time.Unix(e.claims.NotBefore, 0)) {
		return Claims{}, false
	}
	return e.claims, true
}

func (t *tokenCache) put(token string, c Claims, until, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.entries) >= t.max {
		for k, e := range t.entries {
			if !now.Before(e.until) {
				delete(t.entries, k)
			}
		}
		if len(t.entries) >= t.max {
			clear(t.entries)
		}
	}
	// The token may point into a request buffer that is reused once the
	// request is answered: the map keeps a copy of its own.
	t.entries[strings.Clone(token)] = cacheEntry{claims: c, until: until}
}
