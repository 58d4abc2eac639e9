-- RAG service state (app/rag): documents, chunks and per-index document
-- frequencies, as in the Postgres migration of the same number (0030, so
-- that migrations of parallel work do not collide with it). Times are Unix
-- microseconds, UTC; JSON columns are TEXT.

CREATE TABLE rag_documents (
    tenant_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    index_name TEXT NOT NULL,
    source     TEXT NOT NULL,
    document   TEXT NOT NULL,
    uri        TEXT NOT NULL DEFAULT '',
    title      TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}',
    chunks     INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, source, document)
) WITHOUT ROWID;

CREATE TABLE rag_chunks (
    tenant_id    TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    index_name   TEXT NOT NULL,
    source       TEXT NOT NULL,
    document     TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    hash         TEXT NOT NULL,
    text         TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset   INTEGER NOT NULL,
    length       INTEGER NOT NULL,
    terms        TEXT NOT NULL,
    embedding    TEXT,
    metadata     TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, namespace, index_name, source, document, ordinal)
);

CREATE TABLE rag_terms (
    tenant_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    index_name TEXT NOT NULL,
    term       TEXT NOT NULL,
    df         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, term)
) WITHOUT ROWID;

-- rag_postings is the inverted index: one row per term of each chunk with
-- its frequency there, so a retrieval reads the rows of the query's terms
-- only, not every chunk of the index.
CREATE TABLE rag_postings (
    tenant_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    index_name TEXT NOT NULL,
    term       TEXT NOT NULL,
    source     TEXT NOT NULL,
    document   TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    tf         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, term, source, document, ordinal)
) WITHOUT ROWID;
CREATE INDEX rag_postings_chunk ON rag_postings (tenant_id, namespace, index_name, source, document, ordinal);
