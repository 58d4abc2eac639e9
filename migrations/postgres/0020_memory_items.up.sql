-- Items of the memory service (app/memory). One row per item of a Memory
-- resource, under the same row-level security as 0001 (tenant_id, ENABLE +
-- FORCE, the tenant_isolation policy). Items are not resources: they are
-- not part of the change log, and writing them does not lock tenant_state.
-- Numbered 0020 so that it does not collide with the migrations other
-- services add after 0007.
CREATE TABLE memory_items (
    tenant_id       text COLLATE "C" NOT NULL,
    namespace       text COLLATE "C" NOT NULL,
    memory          text COLLATE "C" NOT NULL,
    id              text COLLATE "C" NOT NULL,
    agent           text COLLATE "C" NOT NULL DEFAULT '',
    conversation    text COLLATE "C" NOT NULL DEFAULT '',
    text            text NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}',
    summary         boolean NOT NULL DEFAULT false,
    summarized_into text COLLATE "C" NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    PRIMARY KEY (tenant_id, namespace, memory, id)
);

-- Queries read one memory newest first; trims find the oldest and the
-- expired.
CREATE INDEX memory_items_recent ON memory_items (tenant_id, namespace, memory, created_at DESC, id DESC);
CREATE INDEX memory_items_expiry ON memory_items (tenant_id, namespace, memory, expires_at)
    WHERE expires_at IS NOT NULL;

ALTER TABLE memory_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_items FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_items
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON memory_items TO warden_app;
