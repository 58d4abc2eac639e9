DROP FUNCTION IF EXISTS warden_write_call;
