-- span_keys in one b-tree (docs/trace.md, Storage): the primary key is the
-- lookup order, (tenant, kind, value, newest start, block), and the second
-- b-tree by block, which only retention used, is gone: retention finds a
-- due block's keys from its spans (they are the block's distinct agents,
-- tools, models and executions).
CREATE TABLE span_keys_0043 (
    tenant_id TEXT NOT NULL,
    kind      INTEGER NOT NULL,
    value     TEXT NOT NULL,
    max_start INTEGER NOT NULL,
    block_id  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, kind, value, max_start, block_id)
) WITHOUT ROWID;
INSERT INTO span_keys_0043 (tenant_id, kind, value, max_start, block_id)
    SELECT tenant_id, kind, value, max_start, block_id FROM span_keys;
DROP TABLE span_keys;
ALTER TABLE span_keys_0043 RENAME TO span_keys;
