-- Span blocks (docs/trace.md): the spans of one trace that one write
-- transaction stores, encoded compactly and compressed in one row
-- (store.SpanCodec), instead of a row and up to five index entries per
-- span. The spans table of 0018 stays readable until retention empties it.

-- span_blocks holds one block: min_start and max_start (Unix nanoseconds)
-- bound its spans' start times; spans counts them. Ids are assigned by the
-- single writer in write order.
CREATE TABLE span_blocks (
    id        INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    trace_id  BLOB NOT NULL,
    min_start INTEGER NOT NULL,
    max_start INTEGER NOT NULL,
    spans     INTEGER NOT NULL,
    data      BLOB NOT NULL
);
CREATE INDEX span_blocks_trace ON span_blocks (tenant_id, trace_id);
CREATE INDEX span_blocks_time ON span_blocks (tenant_id, max_start);

-- span_keys indexes a block once per distinct agent (kind 1), tool (2),
-- model (3) and execution (4) of its spans; max_start is the block's, so
-- that a lookup reads blocks newest first.
CREATE TABLE span_keys (
    tenant_id TEXT NOT NULL,
    block_id  INTEGER NOT NULL,
    kind      INTEGER NOT NULL,
    value     TEXT NOT NULL,
    max_start INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, block_id, kind, value)
) WITHOUT ROWID;
CREATE INDEX span_keys_value ON span_keys (tenant_id, kind, value, max_start);
