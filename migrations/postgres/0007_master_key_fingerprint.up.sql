-- The fingerprint of the master key an installation was set up with, so
-- that a replica started with another key refuses to start instead of
-- replacing the signing keys it cannot open (docs/operations.md). The
-- fingerprint is an HMAC derived from the key, never the key. The app role
-- may read warden_meta but not write it: it sets the fingerprint only
-- through this function, which writes this one key and nothing else.
CREATE FUNCTION warden_master_key_fingerprint_swap(p_old bytea, p_new bytea)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF p_new IS NULL OR length(p_new) = 0 THEN
        RETURN false;
    END IF;
    IF p_old IS NULL THEN
        INSERT INTO warden_meta (key, value) VALUES ('master_key_fingerprint', p_new)
        ON CONFLICT (key) DO NOTHING;
    ELSE
        UPDATE warden_meta SET value = p_new
        WHERE key = 'master_key_fingerprint' AND value = p_old;
    END IF;
    RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION warden_master_key_fingerprint_swap(bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warden_master_key_fingerprint_swap(bytea, bytea) TO warden_app;
