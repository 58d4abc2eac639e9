package workload

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// memKeys is an in-memory implementation of the signing-key methods of
// store.IdentityStore.
type memKeys struct {
	mu   sync.Mutex
	keys []store.SigningKey
}

func (m *memKeys) SigningKeyList(context.Context) ([]store.SigningKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.SigningKey, len(m.keys))
	for i := range m.keys {
		out[len(m.keys)-1-i] = m.keys[i]
	}
	return out, nil
}

func (m *memKeys) SigningKeyRotate(_ context.Context, k store.SigningKey, active []string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var current []string
	for _, e := range m.keys {
		if e.ID == k.ID {
			return store.ErrAlreadyExists
		}
		if e.RetiredAt == nil {
			current = append(current, e.ID)
		}
	}
	if !store.SameKeySet(current, active) {
		return store.ErrConflict
	}
	for i := range m.keys {
		if m.keys[i].RetiredAt == nil {
			m.keys[i].RetiredAt, m.keys[i].VerifyUntil = &k.CreatedAt, &until
		}
	}
	m.keys = append(m.keys, k)
	return nil
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle struct {
	clock   *clock
	keys    *memKeys
	keyring *secret.Keyring
	issuer  *Issuer
	verify  *Verifier
}

func testKeyring(t testing.TB) *secret.Keyring {
	t.Helper()
	raw := make([]byte, secret.MasterKeySize)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	k, err := secret.NewKeyring(raw)
	require.NoError(t, err)
	return k
}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{clock: &clock{t: t0}, keys: &memKeys{}, keyring: testKeyring(t)}
	var err error
	b.issuer, err = NewIssuer(context.Background(), b.keys, b.keyring, b.clock.Now, Options{})
	require.NoError(t, err)
	b.verify = NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now)
	return b
}

var params = IssueParams{Tenant: "acme", Namespace: "support", Agent: "triage", Environment: "dev", Audience: AudienceToolGateway}

func (b *bundle) issue(t testing.TB, p IssueParams) string {
	t.Helper()
	tok, exp, err := b.issuer.Issue(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().Truncate(time.Second).Add(TokenLifetime), exp)
	return tok
}

func segments(tok string) (h, p, s string) {
	parts := strings.Split(tok, ".")
	return parts[0], parts[1], parts[2]
}

func enc(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestTokenLifetimeAndScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)

	_, p, _ := segments(tok)
	raw, err := base64.RawURLEncoding.DecodeString(p)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(raw, &c))
	require.Equal(t, DefaultIssuer, c["iss"])
	require.Equal(t, "agent:support/triage", c["sub"])
	require.Equal(t, AudienceToolGateway, c["aud"])
	require.Equal(t, float64(300), c["exp"].(float64)-c["iat"].(float64))
	for _, k := range []string{"tenant", "namespace", "agent", "environment", "jti", "nbf"} {
		require.NotEmpty(t, c[k], k)
	}

	tests := []struct {
		name string
		at   time.Duration
		ok   bool
	}{
		{name: "fresh", at: 0, ok: true},
		{name: "4m59s", at: 4*time.Minute + 59*time.Second, ok: true},
		{name: "4m59.999s", at: 5*time.Minute - time.Millisecond, ok: true},
		{name: "exactly 5m", at: 5 * time.Minute},
		{name: "5m1s", at: 5*time.Minute + time.Second},
		{name: "issued in the future beyond leeway", at: -time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := t0.Add(tt.at)
			// A fresh verifier per row: no cache carried between times.
			v := NewVerifier(b.issuer, AudienceToolGateway, func() time.Time { return now })
			pr, err := v.Verify(t.Context(), tok)
			if !tt.ok {
				require.ErrorIs(t, err, auth.ErrUnauthenticated)
				return
			}
			require.NoError(t, err)
			require.Equal(t, auth.Principal{Kind: auth.KindAgent, Tenant: "acme", Namespace: "support", Role: RoleAgent,
				Agent: "triage", Environment: "dev", Subject: "agent:support/triage"}, pr)
		})
	}

	// The cache never extends a token's life.
	v := NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now)
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)
	b.clock.Set(t0.Add(TokenLifetime))
	_, err = v.Verify(t.Context(), tok)
	require.ErrorIs(t, err, ErrInvalidToken)
	require.True(t, v.Accepts(tok), "Accepts only routes; Verify refuses")
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)
	h, p, s := segments(tok)
	var hdr map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(h)
	require.NoError(t, json.Unmarshal(hb, &hdr))
	kid := hdr["kid"].(string)
	pub := b.issuer.keys[kid].Public

	claims := func(mut func(c *Claims)) string {
		pb, _ := base64.RawURLEncoding.DecodeString(p)
		var c Claims
		require.NoError(t, json.Unmarshal(pb, &c))
		mut(&c)
		return enc(c)
	}
	signWith := func(priv ed25519.PrivateKey, header, payload string) string {
		in := header + "." + payload
		return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, []byte(in)))
	}
	resign := func(header, payload string) string {
		return signWith(b.issuer.active.private, header, payload)
	}
	hs256 := func() string {
		in := enc(map[string]string{"alg": "HS256", "kid": kid, "typ": "JWT"}) + "." + p
		m := hmac.New(sha256.New, pub)
		m.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	flip := func(seg string) string {
		r := []byte(seg)
		if r[3] == 'A' {
			r[3] = 'B'
		} else {
			r[3] = 'A'
		}
		return string(r)
	}
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)

	tests := []struct {
		name  string
		token string
	}{
		{name: "tampered payload", token: h + "." + claims(func(c *Claims) { c.Namespace = "prod"; c.Subject = Subject("prod", c.Agent) }) + "." + s},
		{name: "flipped payload byte", token: h + "." + flip(p) + "." + s},
		{name: "tampered signature", token: h + "." + p + "." + flip(s)},
		{name: "truncated signature", token: h + "." + p + "." + s[:20]},
		{name: "alg none, no signature", token: enc(map[string]string{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + p + "."},
		{name: "alg none, kept signature", token: enc(map[string]string{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + p + "." + s},
		{name: "alg HS256 keyed with the public key", token: hs256()},
		{name: "alg RS256", token: enc(map[string]string{"alg": "RS256", "kid": kid, "typ": "JWT"}) + "." + p + "." + s},
		{name: "unknown kid", token: signWith(otherPriv, enc(map[string]string{"alg": "EdDSA", "kid": "nope", "typ": "JWT"}), p)},
		{name: "foreign key under our kid", token: signWith(otherPriv, h, p)},
		{name: "embedded jwk", token: resign(enc(map[string]any{"alg": "EdDSA", "kid": kid, "typ": "JWT", "jwk": map[string]string{"kty": "OKP"}}), p)},
		{name: "jku", token: resign(enc(map[string]any{"alg": "EdDSA", "kid": kid, "typ": "JWT", "jku": "http://evil/jwks"}), p)},
		{name: "x5u", token: resign(enc(map[string]any{"alg": "EdDSA", "kid": kid, "typ": "JWT", "x5u": "http://evil"}), p)},
		{name: "crit", token: resign(enc(map[string]any{"alg": "EdDSA", "kid": kid, "typ": "JWT", "crit": []string{"exp"}}), p)},
		{name: "wrong audience", token: resign(h, claims(func(c *Claims) { c.Audience = AudienceControlPlane }))},
		{name: "audience list", token: resign(h, strings.TrimRight(enc(map[string]any{"aud": []string{AudienceToolGateway}}), "="))},
		{name: "no audience", token: resign(h, claims(func(c *Claims) { c.Audience = "" }))},
		{name: "other issuer", token: resign(h, claims(func(c *Claims) { c.Issuer = "https://evil" }))},
		{name: "lifetime too long", token: resign(h, claims(func(c *Claims) { c.Expiry += 60 }))},
		{name: "all namespaces", token: resign(h, claims(func(c *Claims) { c.Namespace = "*"; c.Subject = Subject("*", c.Agent) }))},
		{name: "sub mismatch", token: resign(h, claims(func(c *Claims) { c.Subject = "agent:support/other" }))},
		{name: "no tenant", token: resign(h, claims(func(c *Claims) { c.Tenant = "" }))},
		{name: "padded base64", token: h + "=." + p + "." + s},
		{name: "four parts", token: tok + ".x"},
		{name: "two parts", token: h + "." + p},
		{name: "empty", token: ""},
		{name: "huge", token: strings.Repeat("a", MaxTokenBytes+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now)
			_, err := v.Verify(t.Context(), tt.token)
			require.ErrorIs(t, err, auth.ErrUnauthenticated)
			require.ErrorIs(t, err, ErrInvalidToken)
		})
	}
	// The untouched token is fine, so the refusals above are about the
	// change each row made.
	_, err := NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now).Verify(t.Context(), resign(h, p))
	require.NoError(t, err)
}

func TestNamespaceAndAudienceScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)
	pr, err := b.verify.Verify(t.Context(), tok)
	require.NoError(t, err)
	require.Equal(t, "support", pr.Namespace)

	cp := NewVerifier(b.issuer, AudienceControlPlane, b.clock.Now)
	_, err = cp.Verify(t.Context(), tok)
	require.ErrorIs(t, err, ErrInvalidToken, "a tool-gateway token is refused by the control plane")
}

func TestRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := b.issue(t, params)
	oldKid := b.issuer.active.ID

	b.clock.Add(time.Minute)
	require.NoError(t, b.issuer.Rotate(t.Context()))
	require.NotEqual(t, oldKid, b.issuer.active.ID)
	_ = b.issue(t, params)

	// Old token keeps verifying after rotation until it expires.
	b.clock.Set(t0.Add(4*time.Minute + 59*time.Second))
	_, err := NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now).Verify(t.Context(), old)
	require.NoError(t, err)

	// JWKS lists both while the old key is in its window.
	require.Len(t, b.issuer.verifyingKeys(t.Context()), 2)

	// A token signed by the retired key inside its window verifies; past the
	// window (retired at t0+1m, window 10m) it does not, even if its exp
	// were later.
	priv := ed25519PrivateFor(t, b, oldKid)
	b.clock.Set(t0.Add(time.Minute + 10*time.Minute - time.Second))
	inside := forge(t, priv, oldKid, b.clock.Now().Add(-time.Minute))
	_, err = NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now).Verify(t.Context(), inside)
	require.NoError(t, err)
	b.clock.Set(t0.Add(time.Minute + 10*time.Minute))
	late := forge(t, priv, oldKid, b.clock.Now().Add(-time.Minute))
	_, err = NewVerifier(b.issuer, AudienceToolGateway, b.clock.Now).Verify(t.Context(), late)
	require.ErrorIs(t, err, ErrInvalidToken)

	b.clock.Set(t0.Add(12 * time.Minute))
	require.Len(t, b.issuer.verifyingKeys(t.Context()), 1)

	// A second issuer over the same store (another replica) verifies tokens
	// of the first, and a rotation on one is picked up by the other through
	// the unknown-kid refresh.
	other, err := NewIssuer(t.Context(), b.keys, b.keyring, b.clock.Now, Options{})
	require.NoError(t, err)
	require.NoError(t, b.issuer.Rotate(t.Context()))
	tok := b.issue(t, params)
	_, err = NewVerifier(other, AudienceToolGateway, b.clock.Now).Verify(t.Context(), tok)
	require.NoError(t, err)
}

func TestMasterKeyRotationReplacesSigningKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)
	// The process restarts with a new master key: the stored private key no
	// longer opens, so the issuer makes a new one and the old public key
	// keeps verifying the live token.
	restarted, err := NewIssuer(t.Context(), b.keys, testKeyring(t), b.clock.Now, Options{})
	require.NoError(t, err)
	require.NotEqual(t, b.issuer.active.ID, restarted.active.ID)
	_, err = NewVerifier(restarted, AudienceToolGateway, b.clock.Now).Verify(t.Context(), tok)
	require.NoError(t, err)
	_, _, err = restarted.Issue(t.Context(), params)
	require.NoError(t, err)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	_, err := NewIssuer(t.Context(), &memKeys{}, testKeyring(t), nil, Options{VerifyWindow: time.Minute})
	require.ErrorContains(t, err, "VerifyWindow")
	_, err = NewIssuer(t.Context(), &memKeys{}, testKeyring(t), nil, Options{Issuer: "ftp://x"})
	require.ErrorContains(t, err, "Issuer")
	i, err := NewIssuer(t.Context(), &memKeys{}, testKeyring(t), nil, Options{Issuer: "https://warden.example.com/"})
	require.NoError(t, err)
	require.Equal(t, "https://warden.example.com", i.Issuer())
	require.Equal(t, "https://warden.example.com/.well-known/jwks.json", i.JWKSURL())
}

func ed25519PrivateFor(t *testing.T, b *bundle, kid string) ed25519.PrivateKey {
	t.Helper()
	list, _ := b.keys.SigningKeyList(t.Context())
	for _, k := range list {
		if k.ID == kid {
			seed, err := b.keyring.Open(k.PrivateKeyEncrypted, privateContext(kid))
			require.NoError(t, err)
			return ed25519.NewKeyFromSeed(seed)
		}
	}
	t.Fatalf("no key %s", kid)
	return nil
}

// forge signs a token with priv as the issuer would have at iat.
func forge(t *testing.T, priv ed25519.PrivateKey, kid string, iat time.Time) string {
	t.Helper()
	iat = iat.Truncate(time.Second)
	c := Claims{Issuer: DefaultIssuer, Subject: Subject("support", "triage"), Audience: AudienceToolGateway,
		IssuedAt: iat.Unix(), NotBefore: iat.Unix(), Expiry: iat.Add(TokenLifetime).Unix(), ID: "x",
		Tenant: "acme", Namespace: "support", Agent: "triage"}
	pb, _ := json.Marshal(c)
	tok, err := signEdDSA(priv, kid, pb)
	require.NoError(t, err)
	return tok
}

func TestAcceptsRoutesByIssuer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.issue(t, params)
	require.True(t, b.verify.Accepts(tok))
	require.False(t, b.verify.Accepts("wk_abc"))
	require.False(t, b.verify.Accepts("a.b.c"))
	require.False(t, b.verify.Accepts(enc(map[string]string{"alg": "RS256"})+"."+enc(map[string]string{"iss": "https://accounts.example.com"})+".sig"))
}

func FuzzParseToken(f *testing.F) {
	b := setup(f)
	tok := b.issue(f, params)
	h, p, s := segments(tok)
	f.Add(tok)
	f.Add(h + "." + p + ".")
	f.Add(enc(map[string]string{"alg": "none"}) + "." + p + ".")
	f.Add(h + "." + enc(map[string]any{"aud": []int{1}}) + "." + s)
	f.Add("..")
	f.Add("a.b.c.d")
	f.Fuzz(func(t *testing.T, token string) {
		_, _ = parseJWS(token)
		_ = b.verify.Accepts(token)
		if token == tok {
			return
		}
		_, err := b.verify.Verify(context.Background(), token)
		if err == nil {
			t.Fatalf("accepted a token the issuer never signed: %q", token)
		}
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("refusal does not wrap ErrUnauthenticated: %v", err)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	bb := setup(b)
	tok := bb.issue(b, params)
	ctx := context.Background()
	run := func(b *testing.B, v *Verifier, fresh bool) {
		b.ReportAllocs()
		for b.Loop() {
			if fresh {
				v.cache = newTokenCache(10)
			}
			p, err := v.Verify(ctx, tok)
			if err != nil {
				b.Fatal(err)
			}
			if p.Namespace == "other" {
				b.Fatal("verified into another namespace")
			}
		}
	}
	b.Run("signature", func(b *testing.B) { run(b, NewVerifier(bb.issuer, AudienceToolGateway, bb.clock.Now), true) })
	b.Run("cached", func(b *testing.B) { run(b, NewVerifier(bb.issuer, AudienceToolGateway, bb.clock.Now), false) })
}

// Two replicas whose rotations fall due at the same moment rotate once:
// after every round exactly one key is active, and every token either
// issued verifies on both.
func TestReplicasRotatingAtOnceLeaveOneActiveKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := NewIssuer(t.Context(), b.keys, b.keyring, b.clock.Now, Options{})
	require.NoError(t, err)
	replicas := []*Issuer{b.issuer, other}
	var tokens []string
	for round := range 5 {
		b.clock.Add(25 * time.Hour)
		rotated := make(chan bool, len(replicas))
		var wg sync.WaitGroup
		for _, r := range replicas {
			wg.Go(func() {
				did, err := r.RotateIfDue(t.Context())
				assert.NoError(t, err)
				rotated <- did
			})
		}
		wg.Wait()
		close(rotated)
		n := 0
		for did := range rotated {
			if did {
				n++
			}
		}
		require.Equal(t, 1, n, "round %d: one replica rotates", round)
		list, err := b.keys.SigningKeyList(t.Context())
		require.NoError(t, err)
		active := 0
		for _, k := range list {
			if k.RetiredAt == nil {
				active++
			}
		}
		require.Equal(t, 1, active, "round %d", round)
		tokens = tokens[:0]
		for _, r := range replicas {
			tok, _, err := r.Issue(t.Context(), params)
			require.NoError(t, err)
			tokens = append(tokens, tok)
		}
		for _, r := range replicas {
			for _, tok := range tokens {
				_, err := NewVerifier(r, AudienceToolGateway, b.clock.Now).Verify(t.Context(), tok)
				require.NoError(t, err, "round %d", round)
			}
		}
	}
}
