-- notification_deliveries records every attempt to deliver an approval's
-- notification (e-mail, webhook, chat): one row an attempt, never updated,
-- under the same row-level security as every tenant table.
CREATE TABLE notification_deliveries (
    tenant_id text COLLATE "C" NOT NULL,
    id        text COLLATE "C" NOT NULL,
    namespace text COLLATE "C" NOT NULL,
    approval  text COLLATE "C" NOT NULL,
    channel   text NOT NULL,
    type      text NOT NULL,
    recipient text NOT NULL,
    attempt   integer NOT NULL,
    outcome   text NOT NULL,
    error     text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX notification_deliveries_approval ON notification_deliveries (tenant_id, namespace, approval, at);

ALTER TABLE notification_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON notification_deliveries
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT ON notification_deliveries TO warden_app;
