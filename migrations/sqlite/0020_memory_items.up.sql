-- Items of the memory service (app/memory), one row per item of a Memory
-- resource. Not part of the change log; writing them does not touch
-- tenant_state. Times are Unix microseconds, UTC; metadata is a JSON
-- object. Numbered 0020 so that it does not collide with the migrations
-- other services add.
CREATE TABLE memory_items (
    tenant_id       TEXT NOT NULL,
    namespace       TEXT NOT NULL,
    memory          TEXT NOT NULL,
    id              TEXT NOT NULL,
    agent           TEXT NOT NULL DEFAULT '',
    conversation    TEXT NOT NULL DEFAULT '',
    text            TEXT NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    summary         INTEGER NOT NULL DEFAULT 0,
    summarized_into TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    PRIMARY KEY (tenant_id, namespace, memory, id)
) WITHOUT ROWID;

CREATE INDEX memory_items_recent ON memory_items (tenant_id, namespace, memory, created_at DESC, id DESC);
