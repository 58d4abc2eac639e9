package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/warden-dev/warden/app/store"
)

// The RAG service's documents, chunks and term statistics (migration
// 0030). Writes lock the tenant's counter row first, as every resource
// write does, so a refresh that also writes a status takes its locks in
// the one order every writer of the tenant takes them.

// RAGDocumentList returns the documents of an index.
func (t *readTx) RAGDocumentList(ctx context.Context, namespace, index string) ([]store.RAGDocument, error) {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return nil, err
	}
	rows, err := t.q.Query(ctx, `SELECT source, document, uri, title, hash, metadata, chunks, updated_at
		FROM rag_documents WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
		ORDER BY source, document`, t.tenant, namespace, index)
	if err != nil {
		return nil, interpretError(fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err))
	}
	defer rows.Close()
	var out []store.RAGDocument
	for rows.Next() {
		d := store.RAGDocument{Namespace: namespace, Index: index}
		var meta []byte
		if err := rows.Scan(&d.Source, &d.Document, &d.URI, &d.Title, &d.Hash, &meta, &d.Chunks, &d.UpdatedAt); err != nil {
			return nil, fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err)
		}
		if err := json.Unmarshal(meta, &d.Metadata); err != nil {
			return nil, fmt.Errorf("rag document %s metadata: %w", d.Document, err)
		}
		d.UpdatedAt = d.UpdatedAt.UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err))
	}
	return out, nil
}

// RAGChunkList returns the chunks of an index matching q.
func (t *readTx) RAGChunkList(ctx context.Context, q store.RAGChunkQuery) ([]store.RAGChunk, error) {
	if err := store.CheckRAGIndex(q.Namespace, q.Index); err != nil {
		return nil, err
	}
	sql := `SELECT source, document, ordinal, hash, text, start_offset, end_offset, length, terms, embedding, metadata
		FROM rag_chunks WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3`
	args := []any{t.tenant, q.Namespace, q.Index}
	if len(q.Sources) > 0 {
		args = append(args, q.Sources)
		sql += fmt.Sprintf(` AND source = ANY($%d)`, len(args))
	}
	if q.Document != "" {
		args = append(args, q.Source, q.Document)
		sql += fmt.Sprintf(` AND source = $%d AND document = $%d`, len(args)-1, len(args))
	}
	sql += ` ORDER BY source, document, ordinal`
	rows, err := t.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, interpretError(fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err))
	}
	defer rows.Close()
	var out []store.RAGChunk
	for rows.Next() {
		c := store.RAGChunk{Namespace: q.Namespace, Index: q.Index}
		var terms, emb, meta []byte
		if err := rows.Scan(&c.Source, &c.Document, &c.Ordinal, &c.Hash, &c.Text, &c.Start, &c.End, &c.Length,
			&terms, &emb, &meta); err != nil {
			return nil, fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err)
		}
		if err := store.DecodeRAGChunkJSON(&c, terms, emb, meta); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err))
	}
	return out, nil
}

// RAGTermStats returns the document frequencies of terms and the index's
// size.
func (t *readTx) RAGTermStats(ctx context.Context, namespace, index string, terms []string) (store.RAGStats, error) {
	st := store.RAGStats{DF: map[string]int64{}}
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return st, err
	}
	if err := t.q.QueryRow(ctx, `SELECT count(*), coalesce(sum(length), 0) FROM rag_chunks
		WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3`, t.tenant, namespace, index).
		Scan(&st.Chunks, &st.TotalLength); err != nil {
		return st, interpretError(fmt.Errorf("rag stats of %s/%s: %w", namespace, index, err))
	}
	if len(terms) == 0 {
		return st, nil
	}
	rows, err := t.q.Query(ctx, `SELECT term, df FROM rag_terms
		WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3 AND term = ANY($4)`, t.tenant, namespace, index, terms)
	if err != nil {
		return st, interpretError(fmt.Errorf("rag terms of %s/%s: %w", namespace, index, err))
	}
	defer rows.Close()
	for rows.Next() {
		var term string
		var df int64
		if err := rows.Scan(&term, &df); err != nil {
			return st, fmt.Errorf("rag terms of %s/%s: %w", namespace, index, err)
		}
		st.DF[term] = df
	}
	return st, interpretError(rows.Err())
}

// RAGPostingList returns the postings of the query's terms.
func (t *readTx) RAGPostingList(ctx context.Context, q store.RAGPostingQuery) ([]store.RAGPosting, error) {
	if err := store.CheckRAGIndex(q.Namespace, q.Index); err != nil {
		return nil, err
	}
	if len(q.Terms) == 0 {
		return nil, nil
	}
	sql := `SELECT p.source, p.document, p.ordinal, p.term, p.tf, c.length FROM rag_postings p
		JOIN rag_chunks c ON c.tenant_id = p.tenant_id AND c.namespace = p.namespace AND c.index_name = p.index_name
			AND c.source = p.source AND c.document = p.document AND c.ordinal = p.ordinal
		WHERE p.tenant_id = $1 AND p.namespace = $2 AND p.index_name = $3 AND p.term = ANY($4)`
	args := []any{t.tenant, q.Namespace, q.Index, q.Terms}
	if len(q.Sources) > 0 {
		args = append(args, q.Sources)
		sql += ` AND p.source = ANY($5)`
	}
	rows, err := t.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, interpretError(fmt.Errorf("rag postings of %s/%s: %w", q.Namespace, q.Index, err))
	}
	defer rows.Close()
	var out []store.RAGPosting
	for rows.Next() {
		var p store.RAGPosting
		if err := rows.Scan(&p.Source, &p.Document, &p.Ordinal, &p.Term, &p.TF, &p.Length); err != nil {
			return nil, fmt.Errorf("rag postings of %s/%s: %w", q.Namespace, q.Index, err)
		}
		out = append(out, p)
	}
	return out, interpretError(rows.Err())
}

// RAGChunkGet returns the chunks named by keys, in their order.
func (t *readTx) RAGChunkGet(ctx context.Context, namespace, index string, keys []store.RAGChunkKey) ([]store.RAGChunk, error) {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	srcs, docs, ords := make([]string, len(keys)), make([]string, len(keys)), make([]int32, len(keys))
	for i, k := range keys {
		srcs[i], docs[i], ords[i] = k.Source, k.Document, int32(k.Ordinal)
	}
	rows, err := t.q.Query(ctx, `SELECT c.source, c.document, c.ordinal, c.hash, c.text, c.start_offset, c.end_offset, c.length,
			c.terms, c.embedding, c.metadata
		FROM unnest($4::text[], $5::text[], $6::int[]) WITH ORDINALITY AS k(source, document, ordinal, i)
		JOIN rag_chunks c ON c.tenant_id = $1 AND c.namespace = $2 AND c.index_name = $3
			AND c.source = k.source AND c.document = k.document AND c.ordinal = k.ordinal
		ORDER BY k.i`, t.tenant, namespace, index, srcs, docs, ords)
	if err != nil {
		return nil, interpretError(fmt.Errorf("rag chunks of %s/%s: %w", namespace, index, err))
	}
	defer rows.Close()
	var out []store.RAGChunk
	for rows.Next() {
		c := store.RAGChunk{Namespace: namespace, Index: index}
		var terms, emb, meta []byte
		if err := rows.Scan(&c.Source, &c.Document, &c.Ordinal, &c.Hash, &c.Text, &c.Start, &c.End, &c.Length,
			&terms, &emb, &meta); err != nil {
			return nil, fmt.Errorf("rag chunks of %s/%s: %w", namespace, index, err)
		}
		if err := store.DecodeRAGChunkJSON(&c, terms, emb, meta); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// RAGDocumentPut inserts or replaces a document row.
func (t *writeTx) RAGDocumentPut(ctx context.Context, d store.RAGDocument) error {
	if err := store.CheckRAGDocument(d.Namespace, d.Index, d.Source, d.Document); err != nil {
		return err
	}
	meta, err := store.EncodeRAGMetadata(d.Metadata)
	if err != nil {
		return err
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	_, err = t.q.Exec(ctx, `INSERT INTO rag_documents
		(tenant_id, namespace, index_name, source, document, uri, title, hash, metadata, chunks, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (tenant_id, namespace, index_name, source, document) DO UPDATE
		SET uri = excluded.uri, title = excluded.title, hash = excluded.hash, metadata = excluded.metadata,
			chunks = excluded.chunks, updated_at = excluded.updated_at`,
		t.tenant, d.Namespace, d.Index, d.Source, d.Document, d.URI, d.Title, d.Hash, meta, d.Chunks, d.UpdatedAt.UTC())
	return interpretError(wrapRAG("put rag document", d.Document, err))
}

// RAGDocumentDelete deletes a document and its chunks.
func (t *writeTx) RAGDocumentDelete(ctx context.Context, namespace, index, source, document string) error {
	if err := store.CheckRAGDocument(namespace, index, source, document); err != nil {
		return err
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	for _, table := range []string{"rag_postings", "rag_chunks"} {
		if _, err := t.q.Exec(ctx, `DELETE FROM `+table+` WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
			AND source = $4 AND document = $5`, t.tenant, namespace, index, source, document); err != nil {
			return interpretError(wrapRAG("delete "+table+" of", document, err))
		}
	}
	_, err := t.q.Exec(ctx, `DELETE FROM rag_documents WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
		AND source = $4 AND document = $5`, t.tenant, namespace, index, source, document)
	return interpretError(wrapRAG("delete rag document", document, err))
}

// RAGChunkPut inserts or replaces a chunk.
func (t *writeTx) RAGChunkPut(ctx context.Context, c store.RAGChunk) error {
	if err := store.CheckRAGDocument(c.Namespace, c.Index, c.Source, c.Document); err != nil {
		return err
	}
	terms, emb, meta, err := store.EncodeRAGChunkJSON(c)
	if err != nil {
		return err
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	_, err = t.q.Exec(ctx, `INSERT INTO rag_chunks
		(tenant_id, namespace, index_name, source, document, ordinal, hash, text, start_offset, end_offset, length, terms, embedding, metadata)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (tenant_id, namespace, index_name, source, document, ordinal) DO UPDATE
		SET hash = excluded.hash, text = excluded.text, start_offset = excluded.start_offset,
			end_offset = excluded.end_offset, length = excluded.length, terms = excluded.terms,
			embedding = excluded.embedding, metadata = excluded.metadata`,
		t.tenant, c.Namespace, c.Index, c.Source, c.Document, c.Ordinal, c.Hash, c.Text, c.Start, c.End, c.Length,
		terms, emb, meta)
	if err != nil {
		return interpretError(wrapRAG("put rag chunk", c.Document, err))
	}
	ts := make([]string, 0, len(c.Terms))
	for t := range c.Terms {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	tfs := make([]int32, len(ts))
	for i, t := range ts {
		tfs[i] = int32(c.Terms[t])
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM rag_postings WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
		AND source = $4 AND document = $5 AND ordinal = $6`, t.tenant, c.Namespace, c.Index, c.Source, c.Document, c.Ordinal)
	b.Queue(`INSERT INTO rag_postings (tenant_id, namespace, index_name, term, source, document, ordinal, tf)
		SELECT $1, $2, $3, u.term, $4, $5, $6, u.tf FROM unnest($7::text[], $8::int[]) AS u(term, tf)`,
		t.tenant, c.Namespace, c.Index, c.Source, c.Document, c.Ordinal, ts, tfs)
	if err := t.q.SendBatch(ctx, b).Close(); err != nil {
		return interpretError(wrapRAG("put rag postings", c.Document, err))
	}
	return nil
}

// RAGChunkDeleteFrom deletes a document's chunks from ordinal from on.
func (t *writeTx) RAGChunkDeleteFrom(ctx context.Context, namespace, index, source, document string, from int) error {
	if err := store.CheckRAGDocument(namespace, index, source, document); err != nil {
		return err
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	for _, table := range []string{"rag_postings", "rag_chunks"} {
		if _, err := t.q.Exec(ctx, `DELETE FROM `+table+` WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
			AND source = $4 AND document = $5 AND ordinal >= $6`, t.tenant, namespace, index, source, document, from); err != nil {
			return interpretError(wrapRAG("delete "+table+" of", document, err))
		}
	}
	return nil
}

// RAGTermAdjust adds deltas to the index's document frequencies.
func (t *writeTx) RAGTermAdjust(ctx context.Context, namespace, index string, deltas map[string]int64) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	terms := make([]string, 0, len(deltas))
	for term, d := range deltas {
		if d != 0 {
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	sort.Strings(terms) // one lock order for concurrent refreshes
	ds := make([]int64, len(terms))
	for i, term := range terms {
		ds[i] = deltas[term]
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO rag_terms AS r (tenant_id, namespace, index_name, term, df)
		SELECT $1, $2, $3, u.term, u.d FROM unnest($4::text[], $5::bigint[]) AS u(term, d)
		ON CONFLICT (tenant_id, namespace, index_name, term) DO UPDATE SET df = r.df + excluded.df`,
		t.tenant, namespace, index, terms, ds)
	b.Queue(`DELETE FROM rag_terms WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3
		AND term = ANY($4) AND df <= 0`, t.tenant, namespace, index, terms)
	if err := t.q.SendBatch(ctx, b).Close(); err != nil {
		return interpretError(fmt.Errorf("adjust rag terms of %s/%s: %w", namespace, index, err))
	}
	return nil
}

// RAGIndexPurge deletes every row of an index.
func (t *writeTx) RAGIndexPurge(ctx context.Context, namespace, index string) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	if _, err := t.lockState(ctx); err != nil {
		return err
	}
	for _, table := range []string{"rag_postings", "rag_chunks", "rag_documents", "rag_terms"} {
		if _, err := t.q.Exec(ctx, `DELETE FROM `+table+` WHERE tenant_id = $1 AND namespace = $2 AND index_name = $3`,
			t.tenant, namespace, index); err != nil {
			return interpretError(fmt.Errorf("purge %s of %s/%s: %w", table, namespace, index, err))
		}
	}
	return nil
}

func wrapRAG(what, document string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", what, document, err)
}
