-- RAG service state (app/rag): the documents each RAGIndex took from its
-- KnowledgeSources, their chunks with term frequencies (and embeddings
-- when the index names an embedding model), and per-index document
-- frequencies for BM25. Plain tenant rows under the same row-level
-- security as 0001 (tenant_id, ENABLE + FORCE, the tenant_isolation
-- policy); none of them is part of the change log. Numbered 0030 so that
-- migrations of parallel work (0008 ...) do not collide with it.

-- rag_documents holds one row per document of a source in an index; hash
-- is the SHA-256 of the document's text, so a refresh skips a document
-- whose text did not change.
CREATE TABLE rag_documents (
    tenant_id  text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    index_name text COLLATE "C" NOT NULL,
    source     text COLLATE "C" NOT NULL,
    document   text COLLATE "C" NOT NULL,
    uri        text NOT NULL DEFAULT '',
    title      text NOT NULL DEFAULT '',
    hash       text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}',
    chunks     integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, source, document)
);

-- rag_chunks holds the chunks of a document in order; hash is the SHA-256
-- of the chunk's text, so an unchanged chunk keeps its row (and its
-- embedding). terms maps each term of the chunk to its frequency.
CREATE TABLE rag_chunks (
    tenant_id    text COLLATE "C" NOT NULL,
    namespace    text COLLATE "C" NOT NULL,
    index_name   text COLLATE "C" NOT NULL,
    source       text COLLATE "C" NOT NULL,
    document     text COLLATE "C" NOT NULL,
    ordinal      integer NOT NULL,
    hash         text NOT NULL,
    text         text NOT NULL,
    start_offset integer NOT NULL,
    end_offset   integer NOT NULL,
    length       integer NOT NULL,
    terms        jsonb NOT NULL,
    embedding    jsonb,
    metadata     jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, namespace, index_name, source, document, ordinal)
);

-- rag_terms holds, per index, how many chunks contain each term (BM25's
-- document frequency). A term whose count reaches zero is deleted.
CREATE TABLE rag_terms (
    tenant_id  text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    index_name text COLLATE "C" NOT NULL,
    term       text COLLATE "C" NOT NULL,
    df         bigint NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, term)
);

-- rag_postings is the inverted index: one row per term of each chunk with
-- its frequency there, so a retrieval reads the rows of the query's terms
-- only, not every chunk of the index.
CREATE TABLE rag_postings (
    tenant_id  text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    index_name text COLLATE "C" NOT NULL,
    term       text COLLATE "C" NOT NULL,
    source     text COLLATE "C" NOT NULL,
    document   text COLLATE "C" NOT NULL,
    ordinal    integer NOT NULL,
    tf         integer NOT NULL,
    PRIMARY KEY (tenant_id, namespace, index_name, term, source, document, ordinal)
);
CREATE INDEX rag_postings_chunk ON rag_postings (tenant_id, namespace, index_name, source, document, ordinal);

ALTER TABLE rag_documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE rag_documents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rag_documents
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE rag_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE rag_chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rag_chunks
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE rag_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE rag_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rag_terms
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

ALTER TABLE rag_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE rag_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rag_postings
    USING (tenant_id = current_setting('warden.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('warden.tenant_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON rag_documents, rag_chunks, rag_terms, rag_postings TO warden_app;
