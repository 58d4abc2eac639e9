-- Retention (docs/operations.md): the job deletes finished ToolCalls and
-- decided Approvals, old events, expired sessions and the oldest audit
-- records of every tenant, a few hundred rows a transaction.

-- The least recently written records of a kind come first.
CREATE INDEX resources_age ON resources (tenant_id, kind, rv);

-- Expired sessions of a tenant, oldest first.
CREATE INDEX sessions_expiry ON sessions (tenant_id, expires_at);

-- audit_checkpoints holds, per tenant, the last record removed from the
-- start of its audit chain (sequence number, hash, time), sealed under the
-- master key: the verifier starts the chain there.
CREATE TABLE audit_checkpoints (
    tenant_id TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL,
    hash      TEXT NOT NULL,
    time      INTEGER NOT NULL, -- Unix microseconds, UTC
    cut_at    INTEGER NOT NULL, -- Unix microseconds, UTC
    seal      BLOB NOT NULL
) WITHOUT ROWID;

-- A checkpoint only moves forward.
CREATE TRIGGER audit_checkpoints_forward BEFORE UPDATE ON audit_checkpoints
WHEN NEW.seq <= OLD.seq OR NEW.tenant_id <> OLD.tenant_id
BEGIN
    SELECT RAISE(ABORT, 'an audit checkpoint only moves forward');
END;

-- The audit log stays append-only, but for the records a checkpoint
-- stands for.
DROP TRIGGER audit_log_no_delete;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.seq > coalesce((SELECT seq FROM audit_checkpoints WHERE tenant_id = OLD.tenant_id), 0)
BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;
