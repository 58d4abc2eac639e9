-- route_decisions holds the model router's routing decisions: for one
-- model call, the candidates in order and what became of each, as the
-- router decided them (data, jsonb). GET /v1/route/{name}/explain reads
-- them back by (namespace, execution, route). A tenant row under the same
-- row-level security as 0001 (tenant_id, ENABLE + FORCE, the
-- tenant_isolation policy); not part of the change log. seq orders the
-- decisions of one execution as they were written.
CREATE TABLE route_decisions (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text COLLATE "C" NOT NULL,
    id        text NOT NULL,
    namespace text COLLATE "C" NOT NULL,
    execution text COLLATE "C" NOT NULL,
    route     text COLLATE "C" NOT NULL,
    agent     text NOT NULL,
    time      timestamptz NOT NULL,
    data      jsonb NOT NULL
);
CREATE INDEX route_decisions_execution ON route_decisions (tenant_id, namespace, execution, route, seq);
CREATE INDEX route_decisions_time ON route_decisions (tenant_id, time);

ALTER TABLE route_decisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE route_decisions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON route_decisions
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON route_decisions TO warden_app;
