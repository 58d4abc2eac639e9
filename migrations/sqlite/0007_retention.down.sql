DROP TRIGGER IF EXISTS audit_log_no_delete;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;
DROP TRIGGER IF EXISTS audit_checkpoints_forward;
DROP TABLE IF EXISTS audit_checkpoints;
DROP INDEX IF EXISTS sessions_expiry;
DROP INDEX IF EXISTS resources_age;
