DROP FUNCTION IF EXISTS warden_tenant_delete(text);
