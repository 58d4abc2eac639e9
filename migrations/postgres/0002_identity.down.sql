DROP FUNCTION IF EXISTS warden_api_key_touch(text, text, timestamptz);
DROP FUNCTION IF EXISTS warden_session_end_member(text);
DROP FUNCTION IF EXISTS warden_session_delete(text);
DROP FUNCTION IF EXISTS warden_session_insert(text, text, text, text, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS warden_session_get(text, timestamptz);
DROP FUNCTION IF EXISTS warden_memberships_by_email(text);
DROP FUNCTION IF EXISTS warden_tenant_list();
DROP FUNCTION IF EXISTS warden_tenant_get(text);
DROP FUNCTION IF EXISTS warden_tenant_create(text, text, timestamptz);
DROP TABLE IF EXISTS signing_keys;
DROP TABLE IF EXISTS sessions;
DROP TABLE IF EXISTS members;
DROP TABLE IF EXISTS tenants;

-- Restore the lookup of 0001, without last_used_at.
DROP FUNCTION IF EXISTS warden_api_key_lookup(text);
DROP POLICY IF EXISTS api_key_touch ON api_keys;
ALTER TABLE api_keys DROP COLUMN IF EXISTS last_used_at;
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
