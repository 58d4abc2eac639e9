-- Retention (docs/operations.md): the job deletes finished ToolCalls and
-- decided Approvals, old events, expired sessions and the oldest audit
-- records of every tenant, a few hundred rows a transaction, under the
-- tenant's row-level security.

-- The least recently written records of a kind come first.
CREATE INDEX resources_age ON resources (tenant_id, kind, rv);

-- Expired sessions of a tenant, oldest first.
CREATE INDEX sessions_expiry ON sessions (tenant_id, expires_at);

-- audit_checkpoints holds, per tenant, the last record removed from the
-- start of its audit chain (sequence number, hash, time), sealed under the
-- master key: the verifier starts the chain there.
CREATE TABLE audit_checkpoints (
    tenant_id text COLLATE "C" PRIMARY KEY,
    seq       bigint NOT NULL,
    hash      text NOT NULL,
    time      timestamptz NOT NULL,
    cut_at    timestamptz NOT NULL,
    seal      bytea NOT NULL
);
ALTER TABLE audit_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_checkpoints
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));
GRANT SELECT, INSERT, UPDATE ON audit_checkpoints TO warden_app;

-- A checkpoint only moves forward.
CREATE FUNCTION warden_audit_checkpoint_forward() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq <= OLD.seq OR NEW.tenant_id <> OLD.tenant_id THEN
        RAISE EXCEPTION 'an audit checkpoint only moves forward' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_checkpoints_forward BEFORE UPDATE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION warden_audit_checkpoint_forward();

-- The audit log stays append-only for the application but for the records
-- its tenant's checkpoint stands for. The policy is restrictive: it narrows
-- tenant_isolation, never widens it.
GRANT DELETE ON audit_log TO warden_app;
CREATE POLICY audit_cut ON audit_log AS RESTRICTIVE FOR DELETE TO warden_app
    USING (seq <= coalesce((SELECT c.seq FROM audit_checkpoints c WHERE c.tenant_id = audit_log.tenant_id), 0));

-- warden_session_sweep deletes up to p_limit sessions of the transaction's
-- tenant (warden.tenant_id) that expired before p_before. The app role has
-- no privilege on sessions (0002); this is its only way to delete in bulk.
CREATE FUNCTION warden_session_sweep(p_before timestamptz, p_limit integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM sessions WHERE id_hash IN (
        SELECT id_hash FROM sessions
        WHERE tenant_id = current_setting('warden.tenant_id', true) AND expires_at < p_before
        ORDER BY expires_at LIMIT p_limit);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
REVOKE ALL ON FUNCTION warden_session_sweep(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warden_session_sweep(timestamptz, integer) TO warden_app;
