-- The warden_app role is cluster-wide and may serve other databases, so the
-- down migration leaves it in place; dropping the tables drops its grants.
DROP FUNCTION IF EXISTS warden_api_key_lookup(text);
DROP TABLE IF EXISTS api_keys;
DROP TABLE IF EXISTS audit_log;
DROP TABLE IF EXISTS events;
DROP TABLE IF EXISTS changes;
DROP TABLE IF EXISTS resources;
DROP TABLE IF EXISTS tenant_state;
DROP TABLE IF EXISTS warden_meta;
