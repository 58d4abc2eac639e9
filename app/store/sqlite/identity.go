package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// The IdentityStore methods below run outside a tenant transaction: reads
// on the reader pool, writes on the single writer connection. Never call a
// writing one (TenantCreate, TenantDelete, SessionInsert, SessionDelete,
// APIKeyTouch, SigningKeyInsert, SigningKeyRetire) from inside an Update
// callback: the writer connection is held by that transaction, and the call
// would wait for it forever.

// TenantCreate registers a tenant id in the global directory.
func (s *Store) TenantCreate(ctx context.Context, t store.TenantRecord) error {
	t, err := store.PrepareTenant(t, s.now())
	if err != nil {
		return err
	}
	res, err := s.writer.ExecContext(ctx, `INSERT INTO tenants (id, display_name, created_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, t.ID, t.DisplayName, t.CreatedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlite: create tenant %s: %w", t.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: create tenant %s: %w", t.ID, err)
	} else if n == 0 {
		return fmt.Errorf("create tenant %s: %w", t.ID, store.ErrAlreadyExists)
	}
	return nil
}

// TenantDelete removes a directory entry, so that a failed signup can free
// its name; ErrNotFound when absent. It is not part of store.IdentityStore
// and leaves the tenant's data alone.
func (s *Store) TenantDelete(ctx context.Context, id string) error {
	res, err := s.writer.ExecContext(ctx, `DELETE FROM tenants WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete tenant %s: %w", id, err)
	}
	return requireOne(res, "delete tenant "+id, store.ErrNotFound)
}

// TenantGet returns one directory entry or ErrNotFound.
func (s *Store) TenantGet(ctx context.Context, id string) (*store.TenantRecord, error) {
	var t store.TenantRecord
	var created int64
	err := s.reader.QueryRowContext(ctx, `SELECT id, display_name, created_at FROM tenants WHERE id = ?`, id).
		Scan(&t.ID, &t.DisplayName, &created)
	if err != nil {
		return nil, interpretError(fmt.Errorf("sqlite: get tenant %s: %w", id, err))
	}
	t.CreatedAt = time.UnixMicro(created).UTC()
	return &t, nil
}

// TenantList returns the whole directory ordered by id.
func (s *Store) TenantList(ctx context.Context) ([]store.TenantRecord, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, display_name, created_at FROM tenants ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tenants: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.TenantRecord
	for rows.Next() {
		var t store.TenantRecord
		var created int64
		if err := rows.Scan(&t.ID, &t.DisplayName, &created); err != nil {
			return nil, fmt.Errorf("sqlite: list tenants: %w", err)
		}
		t.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tenants: %w", err)
	}
	return out, nil
}

// memberColumns is the column list scanMembers reads.
const memberColumns = `tenant_id, email, name, owner, status, invited_by, created_at, last_login`

func scanMembers(rows *sql.Rows) ([]store.Member, error) {
	defer func() { _ = rows.Close() }()
	var out []store.Member
	for rows.Next() {
		var m store.Member
		var created int64
		var lastLogin sql.NullInt64
		if err := rows.Scan(&m.Tenant, &m.Email, &m.Name, &m.Owner, &m.Status, &m.InvitedBy, &created, &lastLogin); err != nil {
			return nil, err
		}
		m.CreatedAt = time.UnixMicro(created).UTC()
		m.LastLogin = microPtr(lastLogin)
		out = append(out, m)
	}
	return out, rows.Err()
}

// MembershipsByEmail returns the person's memberships in every tenant,
// ordered by tenant.
func (s *Store) MembershipsByEmail(ctx context.Context, email string) ([]store.Member, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+memberColumns+` FROM members WHERE email = ? ORDER BY tenant_id`,
		store.NormalizeEmail(email))
	if err != nil {
		return nil, fmt.Errorf("sqlite: memberships by e-mail: %w", err)
	}
	out, err := scanMembers(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: memberships by e-mail: %w", err)
	}
	return out, nil
}

// SessionGet returns the session whose id hashes to idHash, unless it has
// expired at now.
func (s *Store) SessionGet(ctx context.Context, idHash string, now time.Time) (*store.Session, error) {
	var ss store.Session
	var created, expires int64
	err := s.reader.QueryRowContext(ctx, `SELECT id_hash, tenant_id, email, csrf_token, created_at, expires_at
		FROM sessions WHERE id_hash = ? AND expires_at > ?`, idHash, now.UnixMicro()).
		Scan(&ss.IDHash, &ss.Tenant, &ss.Email, &ss.CSRFToken, &created, &expires)
	if err != nil {
		return nil, interpretError(fmt.Errorf("sqlite: get session: %w", err))
	}
	ss.CreatedAt = time.UnixMicro(created).UTC()
	ss.ExpiresAt = time.UnixMicro(expires).UTC()
	return &ss, nil
}

// SessionInsert stores a session; ErrAlreadyExists when the hash is taken.
func (s *Store) SessionInsert(ctx context.Context, ss store.Session) error {
	ss, err := store.PrepareSession(ss, s.now())
	if err != nil {
		return err
	}
	res, err := s.writer.ExecContext(ctx, `INSERT INTO sessions (id_hash, tenant_id, email, csrf_token, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id_hash) DO NOTHING`,
		ss.IDHash, ss.Tenant, ss.Email, ss.CSRFToken, ss.CreatedAt.UnixMicro(), ss.ExpiresAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlite: insert session: %w", err)
	}
	return requireOne(res, "insert session", store.ErrAlreadyExists)
}

// SessionDelete removes a session; an unknown hash is not an error.
func (s *Store) SessionDelete(ctx context.Context, idHash string) error {
	if _, err := s.writer.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("sqlite: delete session: %w", err)
	}
	return nil
}

// APIKeyTouch moves a key's last-used time forward to t (never back);
// ErrNotFound when the tenant has no such key.
func (s *Store) APIKeyTouch(ctx context.Context, tenant, id string, t time.Time) error {
	if err := store.CheckTenant(tenant); err != nil {
		return err
	}
	at := t.UnixMicro()
	res, err := s.writer.ExecContext(ctx, `UPDATE api_keys
		SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END
		WHERE tenant_id = ? AND id = ?`, at, at, tenant, id)
	if err != nil {
		return fmt.Errorf("sqlite: touch api key %s: %w", id, err)
	}
	return requireOne(res, "touch api key "+id, store.ErrNotFound)
}

// SigningKeyList returns the signing keys newest first, leaving out retired
// keys whose verification window has closed.
func (s *Store) SigningKeyList(ctx context.Context) ([]store.SigningKey, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, public_key, private_key_encrypted, created_at, retired_at, verify_until
		FROM signing_keys WHERE retired_at IS NULL OR verify_until IS NULL OR verify_until > ?
		ORDER BY created_at DESC, id DESC`, s.now().UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("sqlite: list signing keys: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.SigningKey
	for rows.Next() {
		var k store.SigningKey
		var created int64
		var retired, until sql.NullInt64
		if err := rows.Scan(&k.ID, &k.PublicKey, &k.PrivateKeyEncrypted, &created, &retired, &until); err != nil {
			return nil, fmt.Errorf("sqlite: list signing keys: %w", err)
		}
		k.CreatedAt = time.UnixMicro(created).UTC()
		k.RetiredAt = microPtr(retired)
		k.VerifyUntil = microPtr(until)
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list signing keys: %w", err)
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
	res, err := s.writer.ExecContext(ctx, `INSERT INTO signing_keys (id, public_key, private_key_encrypted, created_at, retired_at, verify_until)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		k.ID, k.PublicKey, k.PrivateKeyEncrypted, k.CreatedAt.UnixMicro(), timePtrMicro(k.RetiredAt), timePtrMicro(k.VerifyUntil))
	if err != nil {
		return fmt.Errorf("sqlite: insert signing key %s: %w", k.ID, err)
	}
	return requireOne(res, "insert signing key "+k.ID, store.ErrAlreadyExists)
}

// SigningKeyRetire stops a key from signing at t (a key already retired
// keeps its first retirement time) and sets its verification deadline;
// ErrNotFound when absent.
func (s *Store) SigningKeyRetire(ctx context.Context, id string, t, verifyUntil time.Time) error {
	if err := store.CheckRetire(id, t, verifyUntil); err != nil {
		return err
	}
	res, err := s.writer.ExecContext(ctx, `UPDATE signing_keys SET retired_at = coalesce(retired_at, ?), verify_until = ?
		WHERE id = ?`, t.UnixMicro(), verifyUntil.UnixMicro(), id)
	if err != nil {
		return fmt.Errorf("sqlite: retire signing key %s: %w", id, err)
	}
	return requireOne(res, "retire signing key "+id, store.ErrNotFound)
}

// SigningKeyRotate retires the keys not yet retired and inserts k, in one
// transaction on the writer connection (BEGIN IMMEDIATE: no other write
// comes between the check and the insert), when those keys are exactly
// active; ErrConflict otherwise.
func (s *Store) SigningKeyRotate(ctx context.Context, k store.SigningKey, active []string, verifyUntil time.Time) error {
	k, err := store.PrepareSigningKey(k, s.now())
	if err != nil {
		return err
	}
	if err := store.CheckRetire(k.ID, k.CreatedAt, verifyUntil); err != nil {
		return err
	}
	if err := s.rotate(ctx, k, active, verifyUntil); err != nil {
		return fmt.Errorf("sqlite: rotate to signing key %s: %w", k.ID, err)
	}
	return nil
}

func (s *Store) rotate(ctx context.Context, k store.SigningKey, active []string, verifyUntil time.Time) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, `SELECT id FROM signing_keys WHERE retired_at IS NULL`)
	if err != nil {
		return err
	}
	var current []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return err
		}
		current = append(current, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !store.SameKeySet(current, active) {
		return fmt.Errorf("the active signing keys are %v, not %v: %w", current, active, store.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE signing_keys SET retired_at = ?, verify_until = ? WHERE retired_at IS NULL`,
		k.CreatedAt.UnixMicro(), verifyUntil.UnixMicro()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO signing_keys (id, public_key, private_key_encrypted, created_at) VALUES (?, ?, ?, ?)`,
		k.ID, k.PublicKey, k.PrivateKeyEncrypted, k.CreatedAt.UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// MasterKeyFingerprint reads the master key's fingerprint from warden_meta.
func (s *Store) MasterKeyFingerprint(ctx context.Context) ([]byte, error) {
	var fp []byte
	err := s.reader.QueryRowContext(ctx, `SELECT value FROM warden_meta WHERE key = ?`, store.MetaMasterKeyFingerprint).Scan(&fp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the master key fingerprint: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the master key fingerprint: %w", err)
	}
	return fp, nil
}

// MasterKeyFingerprintSwap stores next when the stored fingerprint is old
// (none, for a nil old); ErrConflict otherwise.
func (s *Store) MasterKeyFingerprintSwap(ctx context.Context, old, next []byte) error {
	if len(next) == 0 {
		return errors.New("sqlite: swap the master key fingerprint: the new fingerprint is empty")
	}
	var res sql.Result
	var err error
	if old == nil {
		res, err = s.writer.ExecContext(ctx, `INSERT INTO warden_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
			store.MetaMasterKeyFingerprint, next)
	} else {
		res, err = s.writer.ExecContext(ctx, `UPDATE warden_meta SET value = ? WHERE key = ? AND value = ?`,
			next, store.MetaMasterKeyFingerprint, old)
	}
	if err != nil {
		return fmt.Errorf("sqlite: swap the master key fingerprint: %w", err)
	}
	return requireOne(res, "swap the master key fingerprint", store.ErrConflict)
}

// requireOne answers sentinel when a statement changed no row.
func requireOne(res sql.Result, what string, sentinel error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, sentinel)
	}
	return nil
}

// MemberList lists the tenant's members ordered by e-mail.
func (t *readTx) MemberList(ctx context.Context) ([]store.Member, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT `+memberColumns+` FROM members WHERE tenant_id = ? ORDER BY email`, t.tenant)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	out, err := scanMembers(rows)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// MemberGet returns one member of the tenant or ErrNotFound.
func (t *readTx) MemberGet(ctx context.Context, email string) (*store.Member, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT `+memberColumns+` FROM members WHERE tenant_id = ? AND email = ?`,
		t.tenant, store.NormalizeEmail(email))
	if err != nil {
		return nil, fmt.Errorf("get member: %w", err)
	}
	out, err := scanMembers(rows)
	if err != nil {
		return nil, fmt.Errorf("get member: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("get member %s: %w", store.NormalizeEmail(email), store.ErrNotFound)
	}
	return &out[0], nil
}

// APIKeyList lists the tenant's API keys ordered by creation time.
func (t *readTx) APIKeyList(ctx context.Context) ([]store.APIKey, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT id, tenant_id, name, secret_hash, namespace, role, agent,
		created_at, expires_at, revoked_at, last_used_at FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id`, t.tenant)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list api keys: %w", err)
		}
		out = append(out, *k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return out, nil
}

// scanAPIKey reads the columns id, tenant_id, name, secret_hash, namespace,
// role, agent, created_at, expires_at, revoked_at, last_used_at.
func scanAPIKey(row interface{ Scan(dest ...any) error }) (*store.APIKey, error) {
	var k store.APIKey
	var created int64
	var expires, revoked, used sql.NullInt64
	if err := row.Scan(&k.ID, &k.Tenant, &k.Name, &k.SecretHash, &k.Namespace, &k.Role, &k.Agent,
		&created, &expires, &revoked, &used); err != nil {
		return nil, err
	}
	k.CreatedAt = time.UnixMicro(created).UTC()
	k.ExpiresAt = microPtr(expires)
	k.RevokedAt = microPtr(revoked)
	k.LastUsedAt = microPtr(used)
	return &k, nil
}

// MemberUpsert adds a member or updates one, keeping its creation time.
func (t *writeTx) MemberUpsert(ctx context.Context, m store.Member) error {
	m, err := store.PrepareMember(m, t.tenant, t.s.now())
	if err != nil {
		return err
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO members (`+memberColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, email) DO UPDATE SET name = excluded.name, owner = excluded.owner,
			status = excluded.status, invited_by = excluded.invited_by, last_login = excluded.last_login`,
		m.Tenant, m.Email, m.Name, m.Owner, m.Status, m.InvitedBy, m.CreatedAt.UnixMicro(), timePtrMicro(m.LastLogin)); err != nil {
		return interpretError(fmt.Errorf("upsert member %s: %w", m.Email, err))
	}
	return nil
}

// MemberDelete removes a member and ends the person's sessions in the
// tenant; ErrNotFound when absent.
func (t *writeTx) MemberDelete(ctx context.Context, email string) error {
	email = store.NormalizeEmail(email)
	res, err := t.q.ExecContext(ctx, `DELETE FROM members WHERE tenant_id = ? AND email = ?`, t.tenant, email)
	if err != nil {
		return fmt.Errorf("delete member %s: %w", email, err)
	}
	if err := requireOne(res, "delete member "+email, store.ErrNotFound); err != nil {
		return err
	}
	if _, err := t.q.ExecContext(ctx, `DELETE FROM sessions WHERE tenant_id = ? AND email = ?`, t.tenant, email); err != nil {
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
	res, err := t.q.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE tenant_id = ? AND id = ?`,
		at.UnixMicro(), t.tenant, id)
	if err != nil {
		return fmt.Errorf("revoke api key %s: %w", id, err)
	}
	return requireOne(res, "revoke api key "+id, store.ErrNotFound)
}
