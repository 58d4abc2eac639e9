-- Identity: the global tenant directory, members, console sessions, API key
-- usage and the workload-identity signing keys. Times are Unix
-- microseconds, UTC.

-- tenants is the global directory of tenant ids (not tenant data).
CREATE TABLE tenants (
    id           TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- members are the people of a tenant. E-mails are stored lower-cased.
CREATE TABLE members (
    tenant_id  TEXT NOT NULL,
    email      TEXT NOT NULL CHECK (email = lower(email)),
    name       TEXT NOT NULL DEFAULT '',
    owner      INTEGER NOT NULL DEFAULT 0,
    status     TEXT NOT NULL DEFAULT 'invited',
    invited_by TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    last_login INTEGER,
    PRIMARY KEY (tenant_id, email)
) WITHOUT ROWID;
CREATE INDEX members_email ON members (email);

-- sessions are server-side console sessions, keyed by the SHA-256 hex of
-- the cookie value.
CREATE TABLE sessions (
    id_hash    TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    email      TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_member ON sessions (tenant_id, email);

ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;

-- signing_keys belong to the deployment, not to a tenant (one JWKS verifies
-- every tenant's workload tokens); private keys are stored encrypted with
-- the master key.
CREATE TABLE signing_keys (
    id                    TEXT PRIMARY KEY,
    public_key            BLOB NOT NULL,
    private_key_encrypted BLOB NOT NULL,
    created_at            INTEGER NOT NULL,
    retired_at            INTEGER,
    verify_until          INTEGER
) WITHOUT ROWID;
