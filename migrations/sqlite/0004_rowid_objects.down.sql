CREATE TABLE resources_keyed (
    tenant_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    uid       TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    labels    TEXT NOT NULL DEFAULT '{}',
    object    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, kind, namespace, name)
) WITHOUT ROWID;
INSERT INTO resources_keyed SELECT tenant_id, kind, namespace, name, uid, rv, labels, object FROM resources;
DROP TABLE resources;
ALTER TABLE resources_keyed RENAME TO resources;

CREATE TABLE changes_keyed (
    tenant_id TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    type      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    object    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, rv)
) WITHOUT ROWID;
INSERT INTO changes_keyed SELECT tenant_id, rv, type, kind, namespace, name, object FROM changes;
DROP TABLE changes;
ALTER TABLE changes_keyed RENAME TO changes;
