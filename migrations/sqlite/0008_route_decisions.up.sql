-- route_decisions holds the model router's routing decisions: for one
-- model call, the candidates in order and what became of each, as the
-- router decided them (data, JSON). GET /v1/route/{name}/explain reads
-- them back by (namespace, execution, route). Times are Unix microseconds,
-- UTC. The rowid orders the decisions of one execution as they were
-- written.
CREATE TABLE route_decisions (
    tenant_id TEXT NOT NULL,
    id        TEXT NOT NULL,
    namespace TEXT NOT NULL,
    execution TEXT NOT NULL,
    route     TEXT NOT NULL,
    agent     TEXT NOT NULL,
    time      INTEGER NOT NULL,
    data      BLOB NOT NULL
);
CREATE INDEX route_decisions_execution ON route_decisions (tenant_id, namespace, execution, route);
CREATE INDEX route_decisions_time ON route_decisions (tenant_id, time);
