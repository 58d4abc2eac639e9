DROP FUNCTION IF EXISTS warden_master_key_fingerprint_swap(bytea, bytea);
DELETE FROM warden_meta WHERE key = 'master_key_fingerprint';
