-- Identity: the global tenant directory, members, console sessions, API key
-- usage and the workload-identity signing keys.
--
-- Cross-tenant lookups (sign-in by e-mail, session cookie, tenant name
-- availability, API key usage) go through SECURITY DEFINER functions owned
-- by the migrating role. Each function touches only the rows its arguments
-- name; warden_app may EXECUTE them but has no privilege at all on tenants
-- and sessions, so a bug in the application cannot read the directory or
-- another tenant's sessions in bulk. Where a definer function must see rows
-- of a FORCE ROW LEVEL SECURITY table, a policy TO CURRENT_USER (the
-- migrating role, never warden_app) lets it, as api_key_lookup does in 0001.

-- tenants is the global directory of tenant ids. It is not tenant data (it
-- is how a tenant comes to exist), so it has no tenant_id and no RLS; the
-- app role reaches it only through the warden_tenant_* functions below.
CREATE TABLE tenants (
    id           text COLLATE "C" PRIMARY KEY,
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL
);

-- members are the people of a tenant. E-mails are stored lower-cased.
CREATE TABLE members (
    tenant_id  text COLLATE "C" NOT NULL,
    email      text COLLATE "C" NOT NULL CHECK (email = lower(email)),
    name       text NOT NULL DEFAULT '',
    owner      boolean NOT NULL DEFAULT false,
    status     text NOT NULL DEFAULT 'invited',
    invited_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    last_login timestamptz,
    PRIMARY KEY (tenant_id, email)
);
CREATE INDEX members_email ON members (email);

ALTER TABLE members ENABLE ROW LEVEL SECURITY;
ALTER TABLE members FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON members
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));
-- Lets warden_memberships_by_email (owned by the migrating role) read the
-- rows of one e-mail across tenants.
CREATE POLICY members_definer ON members FOR SELECT TO CURRENT_USER USING (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON members TO warden_app;

-- sessions are server-side console sessions, keyed by the SHA-256 hex of
-- the cookie value. The app role has no privilege on the table: it finds,
-- creates and ends sessions only through the warden_session_* functions.
-- RLS is still on, so a future grant would be tenant-scoped.
CREATE TABLE sessions (
    id_hash    text COLLATE "C" PRIMARY KEY,
    tenant_id  text COLLATE "C" NOT NULL,
    email      text COLLATE "C" NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_member ON sessions (tenant_id, email);

ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sessions
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));
CREATE POLICY sessions_definer ON sessions TO CURRENT_USER USING (true) WITH CHECK (true);

-- api_keys: when a key was last used (APIKeyTouch).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
-- Lets warden_api_key_touch update one key's last_used_at across tenants.
CREATE POLICY api_key_touch ON api_keys FOR UPDATE TO CURRENT_USER USING (true) WITH CHECK (true);

-- signing_keys are the Ed25519 keys that sign workload-identity tokens. They
-- belong to the deployment, not to a tenant: one JWKS at
-- /.well-known/jwks.json verifies every tenant's tokens, so the table has no
-- tenant_id and no RLS. The private keys are stored encrypted with the
-- secret broker's master key, so reading the table does not yield a usable
-- key. The app role reads, inserts and retires keys; it never deletes them.
CREATE TABLE signing_keys (
    id                    text COLLATE "C" PRIMARY KEY,
    public_key            bytea NOT NULL,
    private_key_encrypted bytea NOT NULL,
    created_at            timestamptz NOT NULL,
    retired_at            timestamptz,
    verify_until          timestamptz
);
GRANT SELECT, INSERT, UPDATE ON signing_keys TO warden_app;

-- Tenant directory functions.

CREATE FUNCTION warden_tenant_create(p_id text, p_display_name text, p_created_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO tenants (id, display_name, created_at)
    VALUES (p_id, p_display_name, p_created_at)
    ON CONFLICT (id) DO NOTHING;
    RETURN FOUND;
END
$$;

CREATE FUNCTION warden_tenant_get(p_id text)
RETURNS TABLE (id text, display_name text, created_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT t.id, t.display_name, t.created_at FROM tenants t WHERE t.id = p_id
$$;

CREATE FUNCTION warden_tenant_list()
RETURNS TABLE (id text, display_name text, created_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT t.id, t.display_name, t.created_at FROM tenants t ORDER BY t.id
$$;

-- Member functions.

CREATE FUNCTION warden_memberships_by_email(p_email text)
RETURNS TABLE (
    tenant_id text, email text, name text, owner boolean, status text,
    invited_by text, created_at timestamptz, last_login timestamptz
)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT m.tenant_id, m.email, m.name, m.owner, m.status, m.invited_by,
           m.created_at, m.last_login
    FROM members m
    WHERE m.email = p_email
    ORDER BY m.tenant_id
$$;

-- Session functions. warden_session_end_member ends the sessions of one
-- person in the transaction's own tenant (warden.tenant_id), when the
-- person is removed.

CREATE FUNCTION warden_session_get(p_id_hash text, p_now timestamptz)
RETURNS TABLE (
    id_hash text, tenant_id text, email text, csrf_token text,
    created_at timestamptz, expires_at timestamptz
)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT s.id_hash, s.tenant_id, s.email, s.csrf_token, s.created_at, s.expires_at
    FROM sessions s
    WHERE s.id_hash = p_id_hash AND s.expires_at > p_now
$$;

CREATE FUNCTION warden_session_insert(
    p_id_hash text, p_tenant_id text, p_email text, p_csrf_token text,
    p_created_at timestamptz, p_expires_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO sessions (id_hash, tenant_id, email, csrf_token, created_at, expires_at)
    VALUES (p_id_hash, p_tenant_id, p_email, p_csrf_token, p_created_at, p_expires_at)
    ON CONFLICT (id_hash) DO NOTHING;
    RETURN FOUND;
END
$$;

CREATE FUNCTION warden_session_delete(p_id_hash text)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    DELETE FROM sessions WHERE id_hash = p_id_hash
$$;

CREATE FUNCTION warden_session_end_member(p_email text)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    DELETE FROM sessions
    WHERE tenant_id = current_setting('warden.tenant_id', true) AND email = p_email
$$;

-- API key functions. The lookup now returns last_used_at, which changes its
-- result type, so it is dropped and created again.

DROP FUNCTION warden_api_key_lookup(text);
CREATE FUNCTION warden_api_key_lookup(p_secret_hash text)
RETURNS TABLE (
    id text, tenant_id text, name text, secret_hash text, namespace text,
    role text, agent text, created_at timestamptz, expires_at timestamptz,
    revoked_at timestamptz, last_used_at timestamptz
)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
    SELECT k.id, k.tenant_id, k.name, k.secret_hash, k.namespace, k.role,
           k.agent, k.created_at, k.expires_at, k.revoked_at, k.last_used_at
    FROM api_keys k
    WHERE k.secret_hash = p_secret_hash AND k.revoked_at IS NULL
$$;

-- warden_api_key_touch moves one key's last_used_at forward (never back, so
-- replicas touching out of order keep the newest time) and changes nothing
-- else. It answers whether the key exists.
CREATE FUNCTION warden_api_key_touch(p_tenant_id text, p_id text, p_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE api_keys SET last_used_at = GREATEST(last_used_at, p_at)
    WHERE tenant_id = p_tenant_id AND id = p_id;
    RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION
    warden_tenant_create(text, text, timestamptz),
    warden_tenant_get(text),
    warden_tenant_list(),
    warden_memberships_by_email(text),
    warden_session_get(text, timestamptz),
    warden_session_insert(text, text, text, text, timestamptz, timestamptz),
    warden_session_delete(text),
    warden_session_end_member(text),
    warden_api_key_lookup(text),
    warden_api_key_touch(text, text, timestamptz)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    warden_tenant_create(text, text, timestamptz),
    warden_tenant_get(text),
    warden_tenant_list(),
    warden_memberships_by_email(text),
    warden_session_get(text, timestamptz),
    warden_session_insert(text, text, text, text, timestamptz, timestamptz),
    warden_session_delete(text),
    warden_session_end_member(text),
    warden_api_key_lookup(text),
    warden_api_key_touch(text, text, timestamptz)
TO warden_app;
