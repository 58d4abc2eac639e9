CREATE TABLE span_keys_0040 (
    tenant_id TEXT NOT NULL,
    block_id  INTEGER NOT NULL,
    kind      INTEGER NOT NULL,
    value     TEXT NOT NULL,
    max_start INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, block_id, kind, value)
) WITHOUT ROWID;
INSERT INTO span_keys_0040 (tenant_id, block_id, kind, value, max_start)
    SELECT tenant_id, block_id, kind, value, max_start FROM span_keys;
DROP TABLE span_keys;
ALTER TABLE span_keys_0040 RENAME TO span_keys;
CREATE INDEX span_keys_value ON span_keys (tenant_id, kind, value, max_start);
