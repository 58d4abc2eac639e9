DROP FUNCTION IF EXISTS warden_session_sweep(timestamptz, integer);
DROP POLICY IF EXISTS audit_cut ON audit_log;
REVOKE DELETE ON audit_log FROM warden_app;
DROP TABLE IF EXISTS audit_checkpoints;
DROP FUNCTION IF EXISTS warden_audit_checkpoint_forward();
DROP INDEX IF EXISTS sessions_expiry;
DROP INDEX IF EXISTS resources_age;
