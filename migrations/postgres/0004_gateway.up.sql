-- Tool gateway state shared by every replica: idempotency claims and usage
-- counters. Both are plain tenant rows under the same row-level security as
-- 0001 (tenant_id, ENABLE + FORCE, the tenant_isolation policy); neither is
-- part of the change log, and writing them does not lock tenant_state, so
-- a claim or a charge stays one cheap statement.

-- idempotency_keys holds one claim per (namespace, key): the ToolCall that
-- claimed it and when. A released claim, or one older than the caller's
-- window, is taken over by the next claim with an upsert, whose row lock
-- makes concurrent claims of one key serialize. Every column but the key
-- is rewritten in place, so fillfactor leaves room for HOT updates.
CREATE TABLE idempotency_keys (
    tenant_id  text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    call       text NOT NULL,
    claimed_at timestamptz NOT NULL,
    released   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, namespace, key)
) WITH (fillfactor = 80);

-- usage_counters holds one counter per scope key (such as
-- "tool:default/crm.refund") and fixed window. A charge is an upsert that
-- adds to the counter only while the result stays within the caller's caps.
CREATE TABLE usage_counters (
    tenant_id    text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    window_start timestamptz NOT NULL,
    calls        bigint NOT NULL DEFAULT 0,
    cost         double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, key, window_start)
) WITH (fillfactor = 80);

ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idempotency_keys
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE usage_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON usage_counters
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys, usage_counters TO warden_app;
