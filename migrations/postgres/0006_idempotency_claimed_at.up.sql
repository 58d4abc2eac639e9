-- The retention sweep deletes the claims older than a tenant's longest
-- idempotency window, oldest first; without this index every sweep would
-- read the whole table.
CREATE INDEX idempotency_keys_claimed ON idempotency_keys (tenant_id, claimed_at);
