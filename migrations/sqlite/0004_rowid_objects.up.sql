-- resources and changes hold whole objects, commonly a kilobyte (a ToolCall
-- with its input and output) and often more. In a WITHOUT ROWID table a row
-- longer than about 1,000 bytes of a 4 KiB page keeps only about 500 bytes
-- in its leaf and spills the rest into an overflow page of its own: every
-- ToolCall write dirtied a leaf, an overflow page and the freelist, and the
-- table was three quarters empty space. An ordinary (rowid) table keeps rows
-- of up to about 4,000 bytes in the leaf; the key becomes a unique index.

CREATE TABLE resources_rowid (
    tenant_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    uid       TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    labels    TEXT NOT NULL DEFAULT '{}',
    object    TEXT NOT NULL
);
INSERT INTO resources_rowid (tenant_id, kind, namespace, name, uid, rv, labels, object)
    SELECT tenant_id, kind, namespace, name, uid, rv, labels, object FROM resources
    ORDER BY tenant_id, kind, namespace, name;
DROP TABLE resources;
ALTER TABLE resources_rowid RENAME TO resources;
CREATE UNIQUE INDEX resources_key ON resources (tenant_id, kind, namespace, name);

CREATE TABLE changes_rowid (
    tenant_id TEXT NOT NULL,
    rv        INTEGER NOT NULL,
    type      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    object    TEXT NOT NULL
);
INSERT INTO changes_rowid (tenant_id, rv, type, kind, namespace, name, object)
    SELECT tenant_id, rv, type, kind, namespace, name, object FROM changes
    ORDER BY tenant_id, rv;
DROP TABLE changes;
ALTER TABLE changes_rowid RENAME TO changes;
CREATE UNIQUE INDEX changes_key ON changes (tenant_id, rv);
