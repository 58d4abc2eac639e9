package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/store"
)

// The IdentityStore methods run outside a tenant transaction, on the app
// role's pool. The tenant directory, sessions, membership lookup by e-mail
// and API key touches go through the SECURITY DEFINER functions of
// migration 0002: the app role has no privilege on tenants and sessions,
// and row-level security hides members and api_keys without a tenant.
// signing_keys is a deployment-wide table the app role reads and writes
// directly.

// TenantCreate registers a tenant id through warden_tenant_create.
func (s *Store) TenantCreate(ctx context.Context, t store.TenantRecord) error {
	t, err := store.PrepareTenant(t, s.now())
	if err != nil {
		return err
	}
	var created bool
	if err := s.pool.QueryRow(ctx, `SELECT warden_tenant_create($1, $2, $3)`, t.ID, t.DisplayName, t.CreatedAt).
		Scan(&created); err != nil {
		return interpretError(fmt.Errorf("postgres: create tenant %s: %w", t.ID, err))
	}
	if !created {
		return fmt.Errorf("create tenant %s: %w", t.ID, store.ErrAlreadyExists)
	}
	return nil
}

// TenantGet returns one directory entry or ErrNotFound.
func (s *Store) TenantGet(ctx context.Context, id string) (*store.TenantRecord, error) {
	var t store.TenantRecord
	err := s.pool.QueryRow(ctx, `SELECT id, display_name, created_at FROM warden_tenant_get($1)`, id).
		Scan(&t.ID, &t.DisplayName, &t.CreatedAt)
	if err != nil {
		return nil, interpretError(fmt.Errorf("postgres: get tenant %s: %w", id, err))
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return &t, nil
}

// TenantList returns the whole directory ordered by id.
func (s *Store) TenantList(ctx context.Context) ([]store.TenantRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, display_name, created_at FROM warden_tenant_list()`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TenantRecord, error) {
		var t store.TenantRecord
		err := row.Scan(&t.ID, &t.DisplayName, &t.CreatedAt)
		t.CreatedAt = t.CreatedAt.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list tenants: %w", err)
	}
	return out, nil
}

// memberColumns is the column list scanMember reads.
const memberColumns = `tenant_id, email, name, owner, status, invited_by, created_at, last_login`

func scanMember(row pgx.CollectableRow) (store.Member, error) {
	var m store.Member
	if err := row.Scan(&m.Tenant, &m.Email, &m.Name, &m.Owner, &m.Status, &m.InvitedBy, &m.CreatedAt, &m.LastLogin); err != nil {
		return m, err
	}
	m.CreatedAt = m.CreatedAt.UTC()
	m.LastLogin = utcPtr(m.LastLogin)
	return m, nil
}

// MembershipsByEmail returns the person's memberships in every tenant,
// ordered by tenant, through warden_memberships_by_email.
func (s *Store) MembershipsByEmail(ctx context.Context, email string) ([]store.Member, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+memberColumns+` FROM warden_memberships_by_email($1)`, store.NormalizeEmail(email))
	if err != nil {
		return nil, fmt.Errorf("postgres: memberships by e-mail: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanMember)
	if err != nil {
		return nil, fmt.Errorf("postgres: memberships by e-mail: %w", err)
	}
	return out, nil
}

// SessionGet returns the session whose id hashes to idHash, unless it has
// expired at now, through warden_session_get.
func (s *Store) SessionGet(ctx context.Context, idHash string, now time.Time) (*store.Session, error) {
	var ss store.Session
	err := s.pool.QueryRow(ctx, `SELECT id_hash, tenant_id, email, csrf_token, created_at, expires_at
		FROM warden_session_get($1, $2)`, idHash, now).
		Scan(&ss.IDHash, &ss.Tenant, &ss.Email, &ss.CSRFToken, &ss.CreatedAt, &ss.ExpiresAt)
	if err != nil {
		return nil, interpretError(fmt.Errorf("postgres: get session: %w", err))
	}
	ss.CreatedAt = ss.CreatedAt.UTC()
	ss.ExpiresAt = ss.ExpiresAt.UTC()
	return &ss, nil
}

// SessionInsert stores a session through warden_session_insert;
// ErrAlreadyExists when the hash is taken.
func (s *Store) SessionInsert(ctx context.Context, ss store.Session) error {
	ss, err := store.PrepareSession(ss, s.now())
	if err != nil {
		return err
	}
	var inserted bool
	if err := s.pool.QueryRow(ctx, `SELECT warden_session_insert($1, $2, $3, $4, $5, $6)`,
		ss.IDHash, ss.Tenant, ss.Email, ss.CSRFToken, ss.CreatedAt, ss.ExpiresAt).Scan(&inserted); err != nil {
		return interpretError(fmt.Errorf("postgres: insert session: %w", err))
	}
	if !inserted {
		return fmt.Errorf("insert session: %w", store.ErrAlreadyExists)
	}
	return nil
}

// SessionDelete removes a session through warden_session_delete; an
// unknown hash is not an error.
func (s *Store) SessionDelete(ctx context.Context, idHash string) error {
	if _, err := s.pool.Exec(ctx, `SELECT warden_session_delete($1)`, idHash); err != nil {
		return fmt.Errorf("postgres: delete session: %w", err)
	}
	return nil
}

// APIKeyTouch moves a key's last-used time forward to t (never back)
// through warden_api_key_touch; ErrNotFound when the tenant has no such key.
func (s *Store) APIKeyTouch(ctx context.Context, tenant, id string, t time.Time) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	var found bool
	if err := s.pool.QueryRow(ctx, `SELECT warden_api_key_touch($1, $2, $3)`, tenant, id, t.UTC().Truncate(time.Microsecond)).
		Scan(&found); err != nil {
		return fmt.Errorf("postgres: touch api key %s: %w", id, err)
	}
	if !found {
		return fmt.Errorf("touch api key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// SigningKeyList returns the signing keys newest first, leaving out retired
// keys whose verification window has closed.
func (s *Store) SigningKeyList(ctx context.Context) ([]store.SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, public_key, private_key_encrypted, created_at, retired_at, verify_until
		FROM signing_keys WHERE retired_at IS NULL OR verify_until IS NULL OR verify_until > $1
		ORDER BY created_at DESC, id DESC`, s.now())
	if err != nil {
		return nil, fmt.Errorf("postgres: list signing keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SigningKey, error) {
		var k store.SigningKey
		if err := row.Scan(&k.ID, &k.PublicKey, &k.PrivateKeyEncrypted, &k.CreatedAt, &k.RetiredAt, &k.VerifyUntil); err != nil {
			return k, err
		}
		k.CreatedAt = k.CreatedAt.UTC()
		k.RetiredAt = utcPtr(k.RetiredAt)
		k.VerifyUntil = utcPtr(k.VerifyUntil)
		return k, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list signing keys: %w", err)
	}
	return out, nil
}

// SigningKeyInsert stores a new signing key; ErrAlreadyExists when the id
// is taken.
func (s *Store) SigningKeyInsert(ctx context.Context, k store.SigningKey) error {
	k, err := store.PrepareSigningKey(k, s.now())
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO signing_keys (id, public_key, private_key_encrypted, created_at, retired_at, verify_until)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		k.ID, k.PublicKey, k.PrivateKeyEncrypted, k.CreatedAt, k.RetiredAt, k.VerifyUntil)
	if err != nil {
		return interpretError(fmt.Errorf("postgres: insert signing key %s: %w", k.ID, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("insert signing key %s: %w", k.ID, store.ErrAlreadyExists)
	}
	return nil
}

// SigningKeyRetire stops a key from signing at t (a key already retired
// keeps its first retirement time) and sets its verification deadline;
// ErrNotFound when absent.
func (s *Store) SigningKeyRetire(ctx context.Context, id string, t, verifyUntil time.Time) error {
	if err := store.CheckRetire(id, t, verifyUntil); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE signing_keys SET retired_at = coalesce(retired_at, $2), verify_until = $3 WHERE id = $1`,
		id, t.UTC().Truncate(time.Microsecond), verifyUntil.UTC().Truncate(time.Microsecond))
	if err != nil {
		return fmt.Errorf("postgres: retire signing key %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("retire signing key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// signingKeyLock is the transaction-level advisory lock that serializes
// rotations: with it, the check of the keys not yet retired and the insert
// of the new key see no concurrent rotation, even when there is no row yet
// to lock (the first key).
const signingKeyLock int64 = 0x77617264656e_6b // "warden" + "k"

// SigningKeyRotate retires the keys not yet retired and inserts k, in one
// transaction under signingKeyLock, when those keys are exactly active;
// ErrConflict otherwise.
func (s *Store) SigningKeyRotate(ctx context.Context, k store.SigningKey, active []string, verifyUntil time.Time) error {
	k, err := store.PrepareSigningKey(k, s.now())
	if err != nil {
		return err
	}
	if err := store.CheckRetire(k.ID, k.CreatedAt, verifyUntil); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, signingKeyLock); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM signing_keys WHERE retired_at IS NULL`)
		if err != nil {
			return err
		}
		current, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if !store.SameKeySet(current, active) {
			return fmt.Errorf("the active signing keys are %v, not %v: %w", current, active, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = $1, verify_until = $2 WHERE retired_at IS NULL`,
			k.CreatedAt, verifyUntil.UTC().Truncate(time.Microsecond)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO signing_keys (id, public_key, private_key_encrypted, created_at) VALUES ($1, $2, $3, $4)`,
			k.ID, k.PublicKey, k.PrivateKeyEncrypted, k.CreatedAt)
		return err
	})
	if err != nil {
		return interpretError(fmt.Errorf("postgres: rotate to signing key %s: %w", k.ID, err))
	}
	return nil
}

// MasterKeyFingerprint reads the master key's fingerprint from warden_meta,
// which the app role may read.
func (s *Store) MasterKeyFingerprint(ctx context.Context) ([]byte, error) {
	var fp []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM warden_meta WHERE key = $1`, store.MetaMasterKeyFingerprint).Scan(&fp)
	if err != nil {
		return nil, interpretError(fmt.Errorf("postgres: read the master key fingerprint: %w", err))
	}
	return fp, nil
}

// MasterKeyFingerprintSwap writes the fingerprint through
// warden_master_key_fingerprint_swap (migration 0007): the app role may not
// write warden_meta itself.
func (s *Store) MasterKeyFingerprintSwap(ctx context.Context, old, next []byte) error {
	if len(next) == 0 {
		return errors.New("postgres: swap the master key fingerprint: the new fingerprint is empty")
	}
	var swapped bool
	if err := s.pool.QueryRow(ctx, `SELECT warden_master_key_fingerprint_swap($1, $2)`, old, next).Scan(&swapped); err != nil {
		return interpretError(fmt.Errorf("postgres: swap the master key fingerprint: %w", err))
	}
	if !swapped {
		return fmt.Errorf("swap the master key fingerprint: %w", store.ErrConflict)
	}
	return nil
}

// MemberList lists the tenant's members ordered by e-mail.
func (t *readTx) MemberList(ctx context.Context) ([]store.Member, error) {
	rows, err := t.q.Query(ctx, `SELECT `+memberColumns+` FROM members WHERE tenant_id = $1 ORDER BY email`, t.tenant)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanMember)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// MemberGet returns one member of the tenant or ErrNotFound.
func (t *readTx) MemberGet(ctx context.Context, email string) (*store.Member, error) {
	email = store.NormalizeEmail(email)
	rows, err := t.q.Query(ctx, `SELECT `+memberColumns+` FROM members WHERE tenant_id = $1 AND email = $2`, t.tenant, email)
	if err != nil {
		return nil, fmt.Errorf("get member %s: %w", email, err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMember)
	if err != nil {
		return nil, interpretError(fmt.Errorf("get member %s: %w", email, err))
	}
	return &m, nil
}

// apiKeyColumns is the column list scanAPIKey reads.
const apiKeyColumns = `id, tenant_id, name, secret_hash, namespace, role, agent, created_at, expires_at, revoked_at, last_used_at`

func scanAPIKey(row pgx.Row) (store.APIKey, error) {
	var k store.APIKey
	if err := row.Scan(&k.ID, &k.Tenant, &k.Name, &k.SecretHash, &k.Namespace, &k.Role, &k.Agent,
		&k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt); err != nil {
		return k, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.ExpiresAt = utcPtr(k.ExpiresAt)
	k.RevokedAt = utcPtr(k.RevokedAt)
	k.LastUsedAt = utcPtr(k.LastUsedAt)
	return k, nil
}

// APIKeyList lists the tenant's API keys ordered by creation time.
func (t *readTx) APIKeyList(ctx context.Context) ([]store.APIKey, error) {
	rows, err := t.q.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id`, t.tenant)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.APIKey, error) { return scanAPIKey(row) })
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return out, nil
}

// MemberUpsert adds a member or updates one, keeping its creation time.
func (t *writeTx) MemberUpsert(ctx context.Context, m store.Member) error {
	m, err := store.PrepareMember(m, t.tenant, t.s.now())
	if err != nil {
		return err
	}
	if _, err := t.q.Exec(ctx, `INSERT INTO members (`+memberColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant_id, email) DO UPDATE SET name = excluded.name, owner = excluded.owner,
			status = excluded.status, invited_by = excluded.invited_by, last_login = excluded.last_login`,
		m.Tenant, m.Email, m.Name, m.Owner, m.Status, m.InvitedBy, m.CreatedAt, m.LastLogin); err != nil {
		return interpretError(fmt.Errorf("upsert member %s: %w", m.Email, err))
	}
	return nil
}

// MemberDelete removes a member and, through warden_session_end_member,
// ends the person's sessions in this tenant; ErrNotFound when absent.
func (t *writeTx) MemberDelete(ctx context.Context, email string) error {
	email = store.NormalizeEmail(email)
	tag, err := t.q.Exec(ctx, `DELETE FROM members WHERE tenant_id = $1 AND email = $2`, t.tenant, email)
	if err != nil {
		return interpretError(fmt.Errorf("delete member %s: %w", email, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete member %s: %w", email, store.ErrNotFound)
	}
	if _, err := t.q.Exec(ctx, `SELECT warden_session_end_member($1)`, email); err != nil {
		return fmt.Errorf("delete member %s: end sessions: %w", email, err)
	}
	return nil
}

// APIKeyRevoke marks a key of the tenant revoked at t (a key already
// revoked keeps its first revocation time); ErrNotFound when absent.
func (t *writeTx) APIKeyRevoke(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = t.s.now()
	}
	tag, err := t.q.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3) WHERE tenant_id = $1 AND id = $2`,
		t.tenant, id, at.UTC().Truncate(time.Microsecond))
	if err != nil {
		return interpretError(fmt.Errorf("revoke api key %s: %w", id, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("revoke api key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// TenantDelete removes a directory entry through warden_tenant_delete, so
// that a failed signup can free its name; ErrNotFound when absent. It is
// not part of store.IdentityStore and leaves the tenant's data alone.
func (s *Store) TenantDelete(ctx context.Context, id string) error {
	var found bool
	if err := s.pool.QueryRow(ctx, `SELECT warden_tenant_delete($1)`, id).Scan(&found); err != nil {
		return fmt.Errorf("postgres: delete tenant %s: %w", id, err)
	}
	if !found {
		return fmt.Errorf("delete tenant %s: %w", id, store.ErrNotFound)
	}
	return nil
}
