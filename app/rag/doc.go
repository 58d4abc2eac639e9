// Package rag is Warden's RAG service (port 8085, docs/rag.md): it
// refreshes a RAGIndex from its KnowledgeSources (inline documents, files
// under an allowed root, HTTP(S) URLs), chunks the documents, and answers
// retrievals of the top-k chunks for a query.
//
// A refresh (Service.Refresh, run as a River job by jobs.RAG) is
// incremental: a document whose text, title, metadata and the index's
// chunking did not change is skipped by its hash, an unchanged chunk of a
// changed document keeps its row (and embedding) by its own hash, and the
// documents a source no longer has are deleted with their chunks. Each
// document is written in a transaction of its own, together with the
// index's document frequencies (store.RAGTx), so a refresh that stops
// halfway leaves a consistent index and the next one continues.
//
// Retrieval ranks chunks with BM25 over the stored term frequencies, or by
// cosine similarity when the index names an embedding model and the
// service has an OpenAI-compatible /v1/embeddings endpoint. Retrieved text
// is third-party content: it is scanned for prompt injection (package
// scan) and flagged, redacted or withheld per the index's
// spec.scanInjection before it is returned, and every retrieval is
// recorded as a KnowledgeRetrieved event.
//
// The HTTP API (http.go) authenticates like the tool gateway (workload
// tokens of audience warden:rag, or API keys) and asks app/authz for
// every decision.
package rag
