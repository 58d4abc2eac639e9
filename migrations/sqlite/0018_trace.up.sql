-- Trace service storage (docs/trace.md): spans, the resources they share,
-- per-minute aggregates of tool and model calls, and OCSF events. None of
-- them is part of the change log. Times of spans are Unix nanoseconds, of
-- OCSF events Unix milliseconds, of rollups the Unix second a minute starts.

-- spans holds one row per span: the attributes queries filter and
-- aggregate on as columns (NULL when the span does not name them, so the
-- partial indexes stay small), the rest as the OTLP protobuf in data. Rows
-- are appended in rowid order; a retried export may store a span twice,
-- and reads collapse duplicates by span id.
CREATE TABLE spans (
    tenant_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    trace_id  BLOB NOT NULL,
    span_id   BLOB NOT NULL,
    parent_id BLOB,
    name      TEXT NOT NULL,
    kind      INTEGER NOT NULL,
    start_ns  INTEGER NOT NULL,
    end_ns    INTEGER NOT NULL,
    status    INTEGER NOT NULL,
    service   TEXT,
    agent     TEXT,
    tool      TEXT,
    model     TEXT,
    execution TEXT,
    cost      REAL,
    tokens    INTEGER,
    resource  INTEGER NOT NULL,
    data      BLOB NOT NULL
);
CREATE INDEX spans_trace ON spans (tenant_id, trace_id);
CREATE INDEX spans_time ON spans (tenant_id, start_ns);
CREATE INDEX spans_agent ON spans (tenant_id, agent, start_ns) WHERE agent IS NOT NULL;
CREATE INDEX spans_tool ON spans (tenant_id, tool, start_ns) WHERE tool IS NOT NULL;
CREATE INDEX spans_model ON spans (tenant_id, model, start_ns) WHERE model IS NOT NULL;
CREATE INDEX spans_execution ON spans (tenant_id, execution) WHERE execution IS NOT NULL;

-- span_resources holds each distinct resource and scope once; last_seen
-- (Unix nanoseconds) lets retention drop those no span uses any more.
CREATE TABLE span_resources (
    tenant_id TEXT NOT NULL,
    id        INTEGER NOT NULL,
    data      BLOB NOT NULL,
    last_seen INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;

-- span_rollups aggregates the calls of one namespace, agent, tool and model
-- ('' where the calls name none) per minute (width 60) and per hour (width
-- 3600: long windows read hours and only their edges in minutes); minute is
-- the Unix second the bucket starts. Writes add to the row. h0 to h18 count
-- latencies per bucket (store.SpanHistBounds).
CREATE TABLE span_rollups (
    tenant_id   TEXT NOT NULL,
    width       INTEGER NOT NULL,
    minute      INTEGER NOT NULL,
    namespace   TEXT NOT NULL,
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    model       TEXT NOT NULL,
    calls       INTEGER NOT NULL,
    errors      INTEGER NOT NULL,
    latency_sum REAL NOT NULL,
    cost        REAL NOT NULL,
    tokens      INTEGER NOT NULL,
    h0 INTEGER NOT NULL, h1 INTEGER NOT NULL, h2 INTEGER NOT NULL, h3 INTEGER NOT NULL,
    h4 INTEGER NOT NULL, h5 INTEGER NOT NULL, h6 INTEGER NOT NULL, h7 INTEGER NOT NULL,
    h8 INTEGER NOT NULL, h9 INTEGER NOT NULL, h10 INTEGER NOT NULL, h11 INTEGER NOT NULL,
    h12 INTEGER NOT NULL, h13 INTEGER NOT NULL, h14 INTEGER NOT NULL, h15 INTEGER NOT NULL,
    h16 INTEGER NOT NULL, h17 INTEGER NOT NULL, h18 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, width, minute, namespace, agent, tool, model)
) WITHOUT ROWID;

-- ocsf_events holds OCSF 1.x events sent to POST /v1/ocsf.
CREATE TABLE ocsf_events (
    id          INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    time_ms     INTEGER NOT NULL,
    class_uid   INTEGER NOT NULL,
    activity_id INTEGER NOT NULL,
    severity_id INTEGER NOT NULL,
    status_id   INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    operation   TEXT NOT NULL,
    data        BLOB NOT NULL
);
CREATE INDEX ocsf_events_time ON ocsf_events (tenant_id, time_ms);
