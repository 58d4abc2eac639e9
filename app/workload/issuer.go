package workload

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// TokenLifetime is how long a workload token lives: exactly five minutes.
const TokenLifetime = 5 * time.Minute

// Audiences of Warden's own services.
const (
	AudienceToolGateway  = "warden:tool-gateway"
	AudienceControlPlane = "warden:control-plane"
	AudienceModelRouter  = "warden:model-router"
	AudienceMCPGateway   = "warden:mcp-gateway"
	AudienceMemory       = "warden:memory"
	// AudienceTrace is the trace service's ingest (OTLP, OCSF).
	AudienceTrace = "warden:trace"
	// AudienceRAG is the RAG service's (app/rag).
	AudienceRAG = "warden:rag"
)

// RoleAgent is the role of a workload principal. It is not a namespace RBAC
// role: auth.Principal.Authorize grants it no verb; services that accept
// workload tokens authorize the agent by its compiled manifest.
const RoleAgent = "agent"

// DefaultIssuer is the iss of tokens when Options.Issuer is empty: the
// control plane's default local address.
const DefaultIssuer = "http://127.0.0.1:8080"

// Claims are the claims of a workload token.
type Claims struct {
	Issuer      string `json:"iss"`
	Subject     string `json:"sub"`
	Audience    string `json:"aud"`
	IssuedAt    int64  `json:"iat"`
	NotBefore   int64  `json:"nbf"`
	Expiry      int64  `json:"exp"`
	ID          string `json:"jti"`
	Tenant      string `json:"tenant"`
	Namespace   string `json:"namespace"`
	Agent       string `json:"agent"`
	Environment string `json:"environment"`
}

// Subject returns the sub claim of an agent: "agent:<namespace>/<agent>".
func Subject(namespace, agent string) string { return "agent:" + namespace + "/" + agent }

// IssueParams names the workload a token is for.
type IssueParams struct {
	Tenant      string
	Namespace   string
	Agent       string
	Environment string
	// Audience is the service the token is for, e.g. AudienceToolGateway.
	Audience string
}

// SigningKeyStore is the part of store.IdentityStore the issuer uses.
type SigningKeyStore interface {
	SigningKeyList(ctx context.Context) ([]store.SigningKey, error)
	SigningKeyRotate(ctx context.Context, k store.SigningKey, active []string, verifyUntil time.Time) error
}

// Options configure an Issuer.
type Options struct {
	// Issuer is the iss claim and the base of the JWKS URL; default
	// DefaultIssuer.
	Issuer string
	// VerifyWindow is how long a retired key keeps verifying; default 10
	// minutes. It must exceed TokenLifetime so rotation never breaks a live
	// token.
	VerifyWindow time.Duration
	// KeyMaxAge is the age after which RotateIfDue rotates; default 24h.
	KeyMaxAge time.Duration
	// RefreshInterval is how often keys are re-read from the store, so that
	// replicas see each other's rotations; default 30s.
	RefreshInterval time.Duration
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Issuer == "" {
		o.Issuer = DefaultIssuer
	}
	o.Issuer = strings.TrimRight(o.Issuer, "/")
	if o.VerifyWindow == 0 {
		o.VerifyWindow = 10 * time.Minute
	}
	if o.KeyMaxAge == 0 {
		o.KeyMaxAge = 24 * time.Hour
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = 30 * time.Second
	}
	return o
}

// Validate checks o (after WithDefaults) and names the offending field.
func (o Options) Validate() error {
	if !strings.HasPrefix(o.Issuer, "https://") && !strings.HasPrefix(o.Issuer, "http://") {
		return fmt.Errorf("workload options: Issuer %q must be an http(s) URL", o.Issuer)
	}
	if o.VerifyWindow <= TokenLifetime {
		return fmt.Errorf("workload options: VerifyWindow %s must exceed the token lifetime %s", o.VerifyWindow, TokenLifetime)
	}
	if o.KeyMaxAge <= o.VerifyWindow {
		return fmt.Errorf("workload options: KeyMaxAge %s must exceed VerifyWindow %s", o.KeyMaxAge, o.VerifyWindow)
	}
	return nil
}

// VerificationKey is a public key with its verification window.
type VerificationKey struct {
	ID     string
	Public ed25519.PublicKey
	// VerifyUntil is when tokens signed by the key stop verifying; zero
	// while the key is active (or unknown, for remote keys).
	VerifyUntil time.Time
}

// KeySource gives a Verifier the issuer it trusts and its public keys.
type KeySource interface {
	// Issuer is the iss claim tokens must carry.
	Issuer() string
	// VerificationKey returns the key named kid; an error when unknown.
	VerificationKey(ctx context.Context, kid string) (VerificationKey, error)
}

type signingKey struct {
	VerificationKey
	createdAt time.Time
	retired   bool
	private   ed25519.PrivateKey // nil when this keyring cannot open it
}

// Issuer signs workload tokens with Ed25519 keys kept in the store. It is
// also the KeySource of the process that runs it. Safe for concurrent use.
type Issuer struct {
	st      SigningKeyStore
	keyring *secret.Keyring
	now     func() time.Time
	opts    Options

	mu       sync.RWMutex
	keys     map[string]*signingKey
	active   *signingKey
	loadedAt time.Time

	refreshMu   sync.Mutex
	lastMissAt  time.Time
	missBackoff time.Duration
}

var _ KeySource = (*Issuer)(nil)

// NewIssuer loads the signing keys from st, creating the first one when
// none exists and replacing the active one when keyring cannot open it (the
// master key was rotated): the old public key keeps verifying for
// VerifyWindow, so live tokens survive.
func NewIssuer(ctx context.Context, st SigningKeyStore, keyring *secret.Keyring, now func() time.Time, opts Options) (*Issuer, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if st == nil || keyring == nil {
		return nil, errors.New("workload: NewIssuer needs a store and a keyring")
	}
	if now == nil {
		now = time.Now
	}
	i := &Issuer{st: st, keyring: keyring, now: now, opts: opts, missBackoff: 10 * time.Second}
	if err := i.Refresh(ctx); err != nil {
		return nil, err
	}
	i.mu.RLock()
	hasActive := i.active != nil
	i.mu.RUnlock()
	if !hasActive {
		if err := i.Rotate(ctx); err != nil {
			return nil, err
		}
	}
	return i, nil
}

// Issuer returns the iss claim of the tokens.
func (i *Issuer) Issuer() string { return i.opts.Issuer }

// JWKSURL returns the address of the issuer's JWKS document.
func (i *Issuer) JWKSURL() string { return i.opts.Issuer + JWKSPath }

func privateContext(id string) []byte { return secret.Context("warden.dev/SigningKey", id) }

// Refresh re-reads the keys from the store.
func (i *Issuer) Refresh(ctx context.Context) error {
	list, err := i.st.SigningKeyList(ctx)
	if err != nil {
		return fmt.Errorf("workload: list signing keys: %w", err)
	}
	return i.load(list)
}

// load makes list (the store's keys) the issuer's keys.
func (i *Issuer) load(list []store.SigningKey) error {
	list = slices.Clone(list)
	now := i.now()
	keys := make(map[string]*signingKey, len(list))
	var active *signingKey
	sort.SliceStable(list, func(a, b int) bool { return list[a].CreatedAt.After(list[b].CreatedAt) })
	for _, k := range list {
		if len(k.PublicKey) != ed25519.PublicKeySize {
			continue
		}
		sk := &signingKey{VerificationKey: VerificationKey{ID: k.ID, Public: ed25519.PublicKey(k.PublicKey)}, createdAt: k.CreatedAt, retired: k.RetiredAt != nil}
		if k.VerifyUntil != nil {
			sk.VerifyUntil = *k.VerifyUntil
		}
		if sk.retired && !now.Before(sk.VerifyUntil) {
			continue
		}
		keys[k.ID] = sk
		if sk.retired || active != nil {
			continue
		}
		seed, err := i.keyring.Open(k.PrivateKeyEncrypted, privateContext(k.ID))
		if err != nil || len(seed) != ed25519.SeedSize {
			continue // sealed by a rotated-away master key: NewIssuer replaces it
		}
		priv := ed25519.NewKeyFromSeed(seed)
		clear(seed)
		if !priv.Public().(ed25519.PublicKey).Equal(sk.Public) {
			continue
		}
		sk.private = priv
		active = sk
	}
	i.mu.Lock()
	i.keys, i.active, i.loadedAt = keys, active, now
	i.mu.Unlock()
	return nil
}

// Rotate adds a new active signing key and retires every other active key:
// they stop signing now and keep verifying for VerifyWindow, longer than
// any token they signed lives, so rotation never breaks a live token. The
// store does both in one transaction, on condition that the active keys
// are still those Rotate read: when another replica rotated in between,
// Rotate changes nothing and adopts that replica's key instead, so
// replicas rotating at once leave exactly one active key.
func (i *Issuer) Rotate(ctx context.Context) error {
	_, err := i.rotate(ctx, nil)
	return err
}

// rotate rotates, unless due is set and answers false for the active key
// (nil when there is none this keyring can open), and reports whether this
// call rotated.
func (i *Issuer) rotate(ctx context.Context, due func(active *signingKey) bool) (bool, error) {
	list, err := i.st.SigningKeyList(ctx)
	if err != nil {
		return false, fmt.Errorf("workload: list signing keys: %w", err)
	}
	var active []string
	for _, k := range list {
		if k.RetiredAt == nil {
			active = append(active, k.ID)
		}
	}
	if due != nil {
		if err := i.load(list); err != nil {
			return false, err
		}
		i.mu.RLock()
		a := i.active
		i.mu.RUnlock()
		if !due(a) {
			return false, nil
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return false, fmt.Errorf("workload: generate signing key: %w", err)
	}
	id := KeyID(pub)
	sealed, err := i.keyring.Seal(priv.Seed(), privateContext(id))
	if err != nil {
		return false, fmt.Errorf("workload: seal signing key: %w", err)
	}
	now := i.now()
	err = i.st.SigningKeyRotate(ctx, store.SigningKey{ID: id, PublicKey: pub, PrivateKeyEncrypted: sealed, CreatedAt: now},
		active, now.Add(i.opts.VerifyWindow))
	rotated := err == nil
	if errors.Is(err, store.ErrConflict) {
		err = nil // another replica rotated first: use its key
	}
	if err != nil {
		return false, fmt.Errorf("workload: rotate signing key: %w", err)
	}
	return rotated, i.Refresh(ctx)
}

// RotateIfDue rotates when the active key is older than KeyMaxAge (or
// there is none this keyring can open), and reports whether it did. Every
// replica may call it at once: the rotation's precondition lets one of
// them rotate; the server runs it as a once-per-cluster job besides.
func (i *Issuer) RotateIfDue(ctx context.Context) (bool, error) {
	return i.rotate(ctx, func(a *signingKey) bool {
		return a == nil || i.now().Sub(a.createdAt) >= i.opts.KeyMaxAge
	})
}

// KeyID returns the kid of an Ed25519 public key: its RFC 7638 JWK
// thumbprint, base64url.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// Issue signs a token for p that expires exactly TokenLifetime after its
// iat (the current second), and returns it with its expiry.
func (i *Issuer) Issue(ctx context.Context, p IssueParams) (string, time.Time, error) {
	if p.Tenant == "" || p.Namespace == "" || p.Agent == "" || p.Audience == "" {
		return "", time.Time{}, errors.New("workload: a token needs tenant, namespace, agent and audience")
	}
	i.refreshIfStale(ctx)
	i.mu.RLock()
	a := i.active
	i.mu.RUnlock()
	if a == nil {
		return "", time.Time{}, ErrNoSigningKey
	}
	iat := i.now().Truncate(time.Second)
	exp := iat.Add(TokenLifetime)
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", time.Time{}, fmt.Errorf("workload: token id: %w", err)
	}
	c := Claims{
		Issuer: i.opts.Issuer, Subject: Subject(p.Namespace, p.Agent), Audience: p.Audience,
		IssuedAt: iat.Unix(), NotBefore: iat.Unix(), Expiry: exp.Unix(), ID: hex.EncodeToString(jti),
		Tenant: p.Tenant, Namespace: p.Namespace, Agent: p.Agent, Environment: p.Environment,
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("workload: encode claims: %w", err)
	}
	tok, err := signEdDSA(a.private, a.ID, payload)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("workload: sign: %w", err)
	}
	return tok, exp, nil
}

// VerificationKey returns the key kid if it still verifies. An unknown kid
// re-reads the store (at most once per 10 s), so a key another replica
// just created is found.
func (i *Issuer) VerificationKey(ctx context.Context, kid string) (VerificationKey, error) {
	i.refreshIfStale(ctx)
	if k, ok := i.lookup(kid); ok {
		return k, nil
	}
	i.refreshMu.Lock()
	due := i.lastMissAt.IsZero() || i.now().Sub(i.lastMissAt) >= i.missBackoff
	if due {
		i.lastMissAt = i.now()
	}
	i.refreshMu.Unlock()
	if due {
		if err := i.Refresh(ctx); err != nil {
			return VerificationKey{}, err
		}
		if k, ok := i.lookup(kid); ok {
			return k, nil
		}
	}
	return VerificationKey{}, refuse("unknown signing key")
}

func (i *Issuer) lookup(kid string) (VerificationKey, bool) {
	i.mu.RLock()
	k, ok := i.keys[kid]
	i.mu.RUnlock()
	if !ok {
		return VerificationKey{}, false
	}
	return k.VerificationKey, true
}

// refreshIfStale re-reads keys when the last read is older than
// RefreshInterval. One caller refreshes; the others keep using the keys
// they have. A failed refresh keeps the old keys (and is retried later).
func (i *Issuer) refreshIfStale(ctx context.Context) {
	i.mu.RLock()
	stale := i.now().Sub(i.loadedAt) >= i.opts.RefreshInterval
	i.mu.RUnlock()
	if !stale || !i.refreshMu.TryLock() {
		return
	}
	defer i.refreshMu.Unlock()
	_ = i.Refresh(ctx)
}

// verifyingKeys returns every key still verifying, newest first.
func (i *Issuer) verifyingKeys(ctx context.Context) []VerificationKey {
	i.refreshIfStale(ctx)
	now := i.now()
	i.mu.RLock()
	defer i.mu.RUnlock()
	type row struct {
		k VerificationKey
		t time.Time
	}
	rows := make([]row, 0, len(i.keys))
	for _, k := range i.keys {
		if !k.VerifyUntil.IsZero() && !now.Before(k.VerifyUntil) {
			continue
		}
		rows = append(rows, row{k.VerificationKey, k.createdAt})
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].t.After(rows[b].t) })
	out := make([]VerificationKey, len(rows))
	for n, r := range rows {
		out[n] = r.k
	}
	return out
}
