-- Tool gateway state: idempotency claims and usage counters. Neither is
-- part of the change log, and writing them does not touch tenant_state.
-- Times are Unix microseconds, UTC.

-- idempotency_keys holds one claim per (namespace, key): the ToolCall that
-- claimed it and when. A released claim, or one older than the caller's
-- window, is taken over by the next claim with an upsert.
CREATE TABLE idempotency_keys (
    tenant_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    call       TEXT NOT NULL,
    claimed_at INTEGER NOT NULL,
    released   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, namespace, key)
) WITHOUT ROWID;

-- usage_counters holds one counter per scope key (such as
-- "tool:default/crm.refund") and fixed window. A charge is an upsert that
-- adds to the counter only while the result stays within the caller's caps.
CREATE TABLE usage_counters (
    tenant_id    TEXT NOT NULL,
    key          TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    calls        INTEGER NOT NULL DEFAULT 0,
    cost         REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, key, window_start)
) WITHOUT ROWID;
