DROP TABLE IF EXISTS rag_postings;
DROP TABLE IF EXISTS rag_terms;
DROP TABLE IF EXISTS rag_chunks;
DROP TABLE IF EXISTS rag_documents;
