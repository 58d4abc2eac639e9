-- Warden schema for the Postgres store.
--
-- Every tenant table has a tenant_id column and ENABLE + FORCE ROW LEVEL
-- SECURITY with one policy on current_setting('warden.tenant_id', true),
-- which the driver sets with set_config(..., true) (SET LOCAL) at the start
-- of each transaction. The application connects as warden_app, which owns
-- nothing and cannot bypass RLS. Names are compared with COLLATE "C" so that
-- list order is byte order, exactly as in the SQLite driver.

-- The application role. It is cluster-wide and may already exist (another
-- database, or a parallel migration creating it at the same moment). When it
-- exists the migrating role needs no CREATEROLE.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'warden_app') THEN
        CREATE ROLE warden_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

-- warden_meta holds installation-wide values that are not tenant data, such
-- as the HMAC key of list continue tokens. It is the one table without a
-- tenant_id: the app role may read it (it needs the key to sign and check
-- continue tokens) but not write it.
CREATE TABLE warden_meta (
    key   text PRIMARY KEY,
    value bytea NOT NULL
);
GRANT SELECT ON warden_meta TO warden_app;

-- tenant_state holds the per-tenant counters. Every write transaction locks
-- its tenant's row first, so writes of one tenant are serialized and commit
-- order equals resourceVersion order.
CREATE TABLE tenant_state (
    tenant_id  text COLLATE "C" PRIMARY KEY,
    rv         bigint NOT NULL DEFAULT 0,
    floor      bigint NOT NULL DEFAULT 0,
    event_seq  bigint NOT NULL DEFAULT 0,
    audit_seq  bigint NOT NULL DEFAULT 0,
    audit_hash text NOT NULL DEFAULT ''
);

CREATE TABLE resources (
    tenant_id text COLLATE "C" NOT NULL,
    kind      text COLLATE "C" NOT NULL,
    namespace text COLLATE "C" NOT NULL,
    name      text COLLATE "C" NOT NULL,
    uid       text NOT NULL,
    rv        bigint NOT NULL,
    labels    jsonb NOT NULL DEFAULT '{}',
    object    jsonb NOT NULL,
    PRIMARY KEY (tenant_id, kind, namespace, name)
);

CREATE TABLE changes (
    tenant_id text COLLATE "C" NOT NULL,
    rv        bigint NOT NULL,
    type      text NOT NULL,
    kind      text NOT NULL,
    namespace text NOT NULL,
    name      text NOT NULL,
    object    jsonb NOT NULL,
    PRIMARY KEY (tenant_id, rv)
);

CREATE TABLE events (
    tenant_id text COLLATE "C" NOT NULL,
    seq       bigint NOT NULL,
    type      text NOT NULL,
    time      timestamptz NOT NULL,
    namespace text NOT NULL DEFAULT '',
    subject   text NOT NULL DEFAULT '',
    data      jsonb,
    PRIMARY KEY (tenant_id, seq)
);

CREATE TABLE audit_log (
    tenant_id text COLLATE "C" NOT NULL,
    seq       bigint NOT NULL,
    time      timestamptz NOT NULL,
    actor     text NOT NULL,
    verb      text NOT NULL,
    namespace text NOT NULL DEFAULT '',
    resource  text NOT NULL DEFAULT '',
    outcome   text NOT NULL,
    policy    text NOT NULL DEFAULT '',
    reason    text NOT NULL DEFAULT '',
    prev_hash text NOT NULL,
    hash      text NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    tenant_id   text COLLATE "C" NOT NULL,
    name        text NOT NULL DEFAULT '',
    secret_hash text NOT NULL UNIQUE,
    namespace   text NOT NULL DEFAULT '',
    role        text NOT NULL DEFAULT '',
    agent       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

ALTER TABLE tenant_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_state FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_state
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE resources ENABLE ROW LEVEL SECURITY;
ALTER TABLE resources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON resources
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE changes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON changes
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_log
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));
-- The migrating role (owner of the lookup function below) may read every
-- key, so that the SECURITY DEFINER lookup works even when that role is not
-- a superuser. warden_app is never this role.
CREATE POLICY api_key_lookup ON api_keys FOR SELECT TO CURRENT_USER USING (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_state, resources, changes, events, api_keys TO warden_app;
-- The audit log is append-only for the application.
GRANT SELECT, INSERT ON audit_log TO warden_app;

-- warden_api_key_lookup is the one cross-tenant read: it finds a non-revoked
-- key by the hash of its secret before the tenant is known.
CREATE FUNCTION warden_api_key_lookup(p_secret_hash text)
RETURNS TABLE (
    id text, tenant_id text, name text, secret_hash text, namespace text,
    role text, agent text, created_at timestamptz, expires_at timestamptz,
    revoked_at timestamptz
)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT k.id, k.tenant_id, k.name, k.secret_hash, k.namespace, k.role,
           k.agent, k.created_at, k.expires_at, k.revoked_at
    FROM api_keys k
    WHERE k.secret_hash = p_secret_hash AND k.revoked_at IS NULL
$$;
REVOKE ALL ON FUNCTION warden_api_key_lookup(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warden_api_key_lookup(text) TO warden_app;
