-- notification_deliveries records every attempt to deliver an approval's
-- notification (e-mail, webhook, chat): one row an attempt, never updated.
-- Times are Unix microseconds, UTC.
CREATE TABLE notification_deliveries (
    tenant_id TEXT NOT NULL,
    id        TEXT NOT NULL,
    namespace TEXT NOT NULL,
    approval  TEXT NOT NULL,
    channel   TEXT NOT NULL,
    type      TEXT NOT NULL,
    recipient TEXT NOT NULL,
    attempt   INTEGER NOT NULL,
    outcome   TEXT NOT NULL,
    error     TEXT NOT NULL DEFAULT '',
    at        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
CREATE INDEX notification_deliveries_approval ON notification_deliveries (tenant_id, namespace, approval, at);
