package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// Roles, from least to most privileged within a namespace; RoleOwner spans
// the tenant.
const (
	RoleViewer   = "viewer"
	RoleEditor   = "editor"
	RoleApprover = "approver"
	RoleAdmin    = "admin"
	RoleOwner    = "owner"
)

// Verbs that API handlers ask about.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbApply  = "apply"
	VerbPatch  = "patch"
	VerbDelete = "delete"
	// VerbWriteStatus is the system's status subresource write.
	VerbWriteStatus = "writestatus"
)

// AllNamespaces is the namespace scope of a credential valid everywhere in
// its tenant.
const AllNamespaces = "*"

// Principal is an authenticated caller.
type Principal struct {
	// Tenant is the tenant every store call of the request is scoped to.
	Tenant string
	// Subject identifies the caller in audit records, e.g. "apikey:admin".
	Subject string
	// Role is the caller's role within Namespace.
	Role string
	// Namespace is the namespace the credential is scoped to, or AllNamespaces.
	Namespace string
	// System marks Warden's own internal principal (bootstrap, reconcilers),
	// which may write system-only kinds and status.
	System bool
	// Kind says what authenticated: KindAPIKey, KindUser, KindAgent or
	// KindSystem.
	Kind string
	// Email is a person's verified e-mail (KindUser).
	Email string
	// Agent and Environment identify a workload (KindAgent, or an API key
	// bound to one agent).
	Agent       string
	Environment string
}

// Principal kinds.
const (
	KindAPIKey = "apikey"
	KindUser   = "user"
	KindAgent  = "agent"
	KindSystem = "system"
)

// Verifier verifies one kind of bearer credential. Accepts reports, without
// verifying, whether the token has this verifier's shape (an API key prefix,
// a JWT from a known issuer), so the Authenticator can route it; Verify then
// returns the principal or an error wrapping ErrUnauthenticated.
type Verifier interface {
	Accepts(token string) bool
	Verify(ctx context.Context, token string) (Principal, error)
}

// SystemPrincipal returns the principal Warden uses for its own writes.
func SystemPrincipal(tenant string) Principal {
	return Principal{Tenant: tenant, Subject: "system:warden", Role: RoleOwner, Namespace: AllNamespaces, System: true, Kind: KindSystem}
}

// ErrUnauthenticated means no valid credential was presented.
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrForbidden means the principal may not perform the verb.
var ErrForbidden = errors.New("forbidden")

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// APIKeyPrefix starts every Warden API key.
const APIKeyPrefix = "wk_"

// NewAPIKeySecret returns a fresh API key secret and the hash to store.
func NewAPIKeySecret() (secret, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate api key: %w", err)
	}
	secret = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashAPIKey(secret), nil
}

// HashAPIKey returns the SHA-256 hex of an API key secret. Keys carry 256
// bits of randomness, so an unsalted fast hash is the right tool: it allows
// an indexed lookup and offline guessing is infeasible.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Authenticator verifies bearer credentials: Warden API keys itself, and
// every other kind (workload JWTs, OIDC ID tokens) through its Verifiers.
type Authenticator struct {
	store     store.Store
	now       func() time.Time
	verifiers []Verifier
	// guard checks HeaderTenant (AuthenticateTenant).
	guard *TenantGuard
}

// NewAuthenticator returns an Authenticator for API keys and the given
// verifiers, tried in order.
func NewAuthenticator(st store.Store, now func() time.Time, verifiers ...Verifier) *Authenticator {
	return &Authenticator{store: st, now: now, verifiers: verifiers, guard: NewTenantGuard(st, now, nil)}
}

// Authenticate verifies an Authorization header value.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return Principal{}, fmt.Errorf("%w: missing bearer token", ErrUnauthenticated)
	}
	token = strings.TrimSpace(token)
	if strings.HasPrefix(token, APIKeyPrefix) {
		return a.VerifyAPIKey(ctx, token)
	}
	for _, v := range a.verifiers {
		if v.Accepts(token) {
			return v.Verify(ctx, token)
		}
	}
	return Principal{}, fmt.Errorf("%w: unsupported credential", ErrUnauthenticated)
}

// VerifyAPIKey verifies a Warden API key secret.
func (a *Authenticator) VerifyAPIKey(ctx context.Context, secret string) (Principal, error) {
	key, err := a.store.APIKeyLookup(ctx, HashAPIKey(secret))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, fmt.Errorf("%w: unknown or revoked api key", ErrUnauthenticated)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up api key: %w", err)
	}
	if key.ExpiresAt != nil && !a.now().Before(*key.ExpiresAt) {
		return Principal{}, fmt.Errorf("%w: api key expired", ErrUnauthenticated)
	}
	return Principal{Tenant: key.Tenant, Subject: "apikey:" + key.Name, Role: key.Role, Namespace: key.Namespace,
		Kind: KindAPIKey, Agent: key.Agent}, nil
}
