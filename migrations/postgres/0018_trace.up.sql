-- Trace service storage (docs/trace.md): spans, the resources they share,
-- per-minute aggregates of tool and model calls, and OCSF events, under the
-- same row-level security as 0001 (tenant_id, ENABLE + FORCE, the
-- tenant_isolation policy). None of them is part of the change log. Times
-- of spans are Unix nanoseconds, of OCSF events Unix milliseconds, of
-- rollups the Unix second a minute starts.

-- spans holds one row per span: the attributes queries filter and
-- aggregate on as columns (NULL when the span does not name them, so the
-- partial indexes stay small), the rest as the OTLP protobuf in data. A
-- retried export may store a span twice; reads collapse duplicates by span
-- id. (COPY is not allowed under row-level security: batches are one
-- INSERT over unnest of arrays.)
CREATE TABLE spans (
    tenant_id text COLLATE "C" NOT NULL,
    namespace text COLLATE "C" NOT NULL,
    trace_id  bytea NOT NULL,
    span_id   bytea NOT NULL,
    parent_id bytea,
    name      text NOT NULL,
    kind      smallint NOT NULL,
    start_ns  bigint NOT NULL,
    end_ns    bigint NOT NULL,
    status    smallint NOT NULL,
    service   text COLLATE "C",
    agent     text COLLATE "C",
    tool      text COLLATE "C",
    model     text COLLATE "C",
    execution text COLLATE "C",
    cost      double precision,
    tokens    bigint,
    resource  bigint NOT NULL,
    data      bytea NOT NULL
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
    tenant_id text COLLATE "C" NOT NULL,
    id        bigint NOT NULL,
    data      bytea NOT NULL,
    last_seen bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- span_rollups aggregates the calls of one namespace, agent, tool and model
-- ('' where the calls name none) per minute (width 60) and per hour (width
-- 3600: long windows read hours and only their edges in minutes); minute is
-- the Unix second the bucket starts. Writes add to the row. h0 to h18 count
-- latencies per bucket (store.SpanHistBounds).
CREATE TABLE span_rollups (
    tenant_id   text COLLATE "C" NOT NULL,
    width       integer NOT NULL,
    minute      bigint NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    agent       text COLLATE "C" NOT NULL,
    tool        text COLLATE "C" NOT NULL,
    model       text COLLATE "C" NOT NULL,
    calls       bigint NOT NULL,
    errors      bigint NOT NULL,
    latency_sum double precision NOT NULL,
    cost        double precision NOT NULL,
    tokens      bigint NOT NULL,
    h0 bigint NOT NULL, h1 bigint NOT NULL, h2 bigint NOT NULL, h3 bigint NOT NULL,
    h4 bigint NOT NULL, h5 bigint NOT NULL, h6 bigint NOT NULL, h7 bigint NOT NULL,
    h8 bigint NOT NULL, h9 bigint NOT NULL, h10 bigint NOT NULL, h11 bigint NOT NULL,
    h12 bigint NOT NULL, h13 bigint NOT NULL, h14 bigint NOT NULL, h15 bigint NOT NULL,
    h16 bigint NOT NULL, h17 bigint NOT NULL, h18 bigint NOT NULL,
    PRIMARY KEY (tenant_id, width, minute, namespace, agent, tool, model)
) WITH (fillfactor = 80);

-- ocsf_events holds OCSF 1.x events sent to POST /v1/ocsf.
CREATE TABLE ocsf_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text COLLATE "C" NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    time_ms     bigint NOT NULL,
    class_uid   integer NOT NULL,
    activity_id integer NOT NULL,
    severity_id integer NOT NULL,
    status_id   integer NOT NULL,
    actor       text NOT NULL,
    operation   text NOT NULL,
    data        bytea NOT NULL
);
CREATE INDEX ocsf_events_time ON ocsf_events (tenant_id, time_ms);

ALTER TABLE spans ENABLE ROW LEVEL SECURITY;
ALTER TABLE spans FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON spans
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE span_resources ENABLE ROW LEVEL SECURITY;
ALTER TABLE span_resources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON span_resources
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE span_rollups ENABLE ROW LEVEL SECURITY;
ALTER TABLE span_rollups FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON span_rollups
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE ocsf_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE ocsf_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ocsf_events
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON spans, span_resources, span_rollups, ocsf_events TO warden_app;
