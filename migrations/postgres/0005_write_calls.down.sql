DROP FUNCTION IF EXISTS warden_write_calls_end;
DROP FUNCTION IF EXISTS warden_write_calls_begin;
DROP FUNCTION IF EXISTS warden_write_call;
