-- warden_tenant_delete removes one entry of the tenant directory, so that a
-- signup whose tenant transaction failed can free the name again. It
-- touches only the directory row; the tenant's data is not affected.
CREATE FUNCTION warden_tenant_delete(p_id text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM tenants WHERE id = p_id;
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION warden_tenant_delete(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warden_tenant_delete(text) TO warden_app;
