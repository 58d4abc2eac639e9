package store

import (
	"context"
	"time"
)

// IdentityStore holds what identity needs beyond resources: the global
// tenant directory, people's memberships, console sessions, API key
// management and the workload-identity signing keys. Lookups that must work
// before a tenant is known (sign-in by e-mail, session cookie, tenant name
// availability) are the only cross-tenant reads; the Postgres driver serves
// them through SECURITY DEFINER functions that return only the matching
// rows, so the application role still cannot read other tenants' tables.
type IdentityStore interface {
	// TenantCreate registers a tenant id in the global directory;
	// ErrAlreadyExists when the id is taken.
	TenantCreate(ctx context.Context, t TenantRecord) error
	// TenantGet returns one tenant or ErrNotFound.
	TenantGet(ctx context.Context, id string) (*TenantRecord, error)
	// TenantList returns every tenant id, for operator tasks such as master
	// key rotation.
	TenantList(ctx context.Context) ([]TenantRecord, error)

	// MembershipsByEmail returns every tenant a person (lower-cased e-mail)
	// belongs to, for sign-in.
	MembershipsByEmail(ctx context.Context, email string) ([]Member, error)

	// SessionGet finds a console session by the SHA-256 hex of its cookie
	// value; ErrNotFound when unknown or expired at now.
	SessionGet(ctx context.Context, idHash string, now time.Time) (*Session, error)
	// SessionInsert stores a session (only the hash of its id).
	SessionInsert(ctx context.Context, s Session) error
	// SessionDelete removes a session (sign-out); deleting an unknown
	// session is not an error.
	SessionDelete(ctx context.Context, idHash string) error

	// APIKeyTouch records that a key was used at t (callers throttle it).
	APIKeyTouch(ctx context.Context, tenant, id string, t time.Time) error

	// SigningKeyList returns every workload-identity signing key, newest
	// first, including retired ones still inside their verification window.
	SigningKeyList(ctx context.Context) ([]SigningKey, error)
	// SigningKeyInsert stores a new signing key.
	SigningKeyInsert(ctx context.Context, k SigningKey) error
	// SigningKeyRetire stops a key from signing at t; it still verifies
	// until VerifyUntil.
	SigningKeyRetire(ctx context.Context, id string, t, verifyUntil time.Time) error
	// SigningKeyRotate makes k the one active key in one transaction:
	// it retires every key not yet retired at k.CreatedAt, verifying until
	// verifyUntil, and inserts k, provided the keys not yet retired are
	// exactly those named by active (none when active is empty). Otherwise
	// it changes nothing and returns ErrConflict: another replica rotated
	// first. Rotations are serialized, so replicas rotating at once never
	// leave zero or two active keys.
	SigningKeyRotate(ctx context.Context, k SigningKey, active []string, verifyUntil time.Time) error

	// MasterKeyFingerprint returns the fingerprint of the master key the
	// installation was set up with (secret.Keyring.Fingerprint, never the
	// key); ErrNotFound when none is stored yet.
	MasterKeyFingerprint(ctx context.Context) ([]byte, error)
	// MasterKeyFingerprintSwap stores fingerprint next when the stored one
	// is old (when none is stored, for a nil old), and returns ErrConflict
	// otherwise, changing nothing.
	MasterKeyFingerprintSwap(ctx context.Context, old, next []byte) error
}

// MemberTx manages a tenant's people inside a tenant transaction.
type MemberTx interface {
	// MemberUpsert adds or updates a member of the transaction's tenant.
	MemberUpsert(ctx context.Context, m Member) error
	// MemberDelete removes a member; ErrNotFound when absent. It also ends
	// the person's console sessions in this tenant.
	MemberDelete(ctx context.Context, email string) error
	// APIKeyRevoke marks a key revoked at t; ErrNotFound when absent.
	APIKeyRevoke(ctx context.Context, id string, t time.Time) error
}

// MemberReader reads a tenant's people and keys inside a tenant transaction.
type MemberReader interface {
	// MemberList lists the tenant's members ordered by e-mail.
	MemberList(ctx context.Context) ([]Member, error)
	// MemberGet returns one member or ErrNotFound.
	MemberGet(ctx context.Context, email string) (*Member, error)
	// APIKeyList lists the tenant's API keys (hashes included, never
	// secrets) ordered by creation time.
	APIKeyList(ctx context.Context) ([]APIKey, error)
}

// TenantRecord is an entry of the global tenant directory.
type TenantRecord struct {
	// ID is the tenant's DNS-1123 name, unique across the deployment.
	ID          string
	DisplayName string
	CreatedAt   time.Time
}

// Member is a person in a tenant.
type Member struct {
	Tenant string
	// Email is lower-cased.
	Email string
	Name  string
	// Owner marks a tenant owner (above every namespace role).
	Owner bool
	// Status is "invited" until the person first signs in, then "active".
	Status    string
	InvitedBy string
	CreatedAt time.Time
	LastLogin *time.Time
}

// Member statuses.
const (
	MemberInvited = "invited"
	MemberActive  = "active"
)

// Session is a server-side console session.
type Session struct {
	IDHash    string
	Tenant    string
	Email     string
	CSRFToken string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SigningKey is an Ed25519 workload-identity signing key. The private key is
// stored encrypted (envelope-encrypted by the secret broker's master key).
type SigningKey struct {
	ID                  string
	PublicKey           []byte
	PrivateKeyEncrypted []byte
	CreatedAt           time.Time
	// RetiredAt is when the key stopped signing; nil while active.
	RetiredAt *time.Time
	// VerifyUntil is when tokens signed by a retired key stop verifying.
	VerifyUntil *time.Time
}
