-- Warden schema for the embedded SQLite store.

-- warden_meta holds installation-wide values that are not tenant data, such
-- as the HMAC key of list continue tokens.
CREATE TABLE warden_meta (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
);

-- tenant_state holds the per-tenant counters. Every write transaction reads
-- and updates its tenant's row, so writes of one tenant are serialized and
-- commit order equals resourceVersion order.
CREATE TABLE tenant_state (
    tenant_id  TEXT PRIMARY KEY,
    rv         INTEGER NOT NULL DEFAULT 0,
    floor      INTEGER NOT NULL DEFAULT 0,
    event_seq  INTEGER NOT NULL DEFAULT 0,
    audit_seq  INTEGER NOT NULL DEFAULT 0,
    audit_hash TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE TABLE resources (
    tenant_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    uid       TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    labels    TEXT NOT NULL DEFAULT '{}',
    object    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, kind, namespace, name)
) WITHOUT ROWID;

CREATE TABLE changes (
    tenant_id TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    type      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    object    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, rv)
) WITHOUT ROWID;

CREATE TABLE events (
    tenant_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    type      TEXT NOT NULL,
    time      INTEGER NOT NULL, -- Unix microseconds, UTC
    namespace TEXT NOT NULL DEFAULT '',
    subject   TEXT NOT NULL DEFAULT '',
    data      TEXT,
    PRIMARY KEY (tenant_id, seq)
) WITHOUT ROWID;

CREATE TABLE audit_log (
    tenant_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    time      INTEGER NOT NULL, -- Unix microseconds, UTC
    actor     TEXT NOT NULL,
    verb      TEXT NOT NULL,
    namespace TEXT NOT NULL DEFAULT '',
    resource  TEXT NOT NULL DEFAULT '',
    outcome   TEXT NOT NULL,
    policy    TEXT NOT NULL DEFAULT '',
    reason    TEXT NOT NULL DEFAULT '',
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
) WITHOUT ROWID;

-- The audit log is append-only.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    secret_hash TEXT NOT NULL UNIQUE,
    namespace   TEXT NOT NULL DEFAULT '',
    role        TEXT NOT NULL DEFAULT '',
    agent       TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL, -- Unix microseconds, UTC
    expires_at  INTEGER,
    revoked_at  INTEGER
);

CREATE INDEX api_keys_tenant ON api_keys (tenant_id);
