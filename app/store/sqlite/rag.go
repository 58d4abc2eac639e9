package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// The RAG service's documents, chunks and term statistics (migration
// 0030). The single writer connection serializes every write; the
// statements are the Postgres driver's.

// RAGDocumentList returns the documents of an index.
func (t *readTx) RAGDocumentList(ctx context.Context, namespace, index string) ([]store.RAGDocument, error) {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return nil, err
	}
	rows, err := t.q.QueryContext(ctx, `SELECT source, document, uri, title, hash, metadata, chunks, updated_at
		FROM rag_documents WHERE tenant_id = ? AND namespace = ? AND index_name = ?
		ORDER BY source, document`, t.tenant, namespace, index)
	if err != nil {
		return nil, fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err)
	}
	defer rows.Close()
	var out []store.RAGDocument
	for rows.Next() {
		d := store.RAGDocument{Namespace: namespace, Index: index}
		var meta string
		var updated int64
		if err := rows.Scan(&d.Source, &d.Document, &d.URI, &d.Title, &d.Hash, &meta, &d.Chunks, &updated); err != nil {
			return nil, fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err)
		}
		c := store.RAGChunk{Document: d.Document}
		if err := store.DecodeRAGChunkJSON(&c, []byte("{}"), nil, []byte(meta)); err != nil {
			return nil, err
		}
		d.Metadata = c.Metadata
		d.UpdatedAt = time.UnixMicro(updated).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rag documents of %s/%s: %w", namespace, index, err)
	}
	return out, nil
}

// RAGChunkList returns the chunks of an index matching q.
func (t *readTx) RAGChunkList(ctx context.Context, q store.RAGChunkQuery) ([]store.RAGChunk, error) {
	if err := store.CheckRAGIndex(q.Namespace, q.Index); err != nil {
		return nil, err
	}
	query := `SELECT source, document, ordinal, hash, text, start_offset, end_offset, length, terms, embedding, metadata
		FROM rag_chunks WHERE tenant_id = ? AND namespace = ? AND index_name = ?`
	args := []any{t.tenant, q.Namespace, q.Index}
	if len(q.Sources) > 0 {
		query += ` AND source IN (?` + strings.Repeat(`, ?`, len(q.Sources)-1) + `)`
		for _, s := range q.Sources {
			args = append(args, s)
		}
	}
	if q.Document != "" {
		query += ` AND source = ? AND document = ?`
		args = append(args, q.Source, q.Document)
	}
	query += ` ORDER BY source, document, ordinal`
	rows, err := t.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err)
	}
	defer rows.Close()
	var out []store.RAGChunk
	for rows.Next() {
		c := store.RAGChunk{Namespace: q.Namespace, Index: q.Index}
		var terms, meta string
		var emb sql.NullString
		if err := rows.Scan(&c.Source, &c.Document, &c.Ordinal, &c.Hash, &c.Text, &c.Start, &c.End, &c.Length,
			&terms, &emb, &meta); err != nil {
			return nil, fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err)
		}
		var embB []byte
		if emb.Valid {
			embB = []byte(emb.String)
		}
		if err := store.DecodeRAGChunkJSON(&c, []byte(terms), embB, []byte(meta)); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rag chunks of %s/%s: %w", q.Namespace, q.Index, err)
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
	if err := t.q.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length), 0) FROM rag_chunks
		WHERE tenant_id = ? AND namespace = ? AND index_name = ?`, t.tenant, namespace, index).
		Scan(&st.Chunks, &st.TotalLength); err != nil {
		return st, fmt.Errorf("rag stats of %s/%s: %w", namespace, index, err)
	}
	if len(terms) == 0 {
		return st, nil
	}
	args := []any{t.tenant, namespace, index}
	for _, term := range terms {
		args = append(args, term)
	}
	rows, err := t.q.QueryContext(ctx, `SELECT term, df FROM rag_terms
		WHERE tenant_id = ? AND namespace = ? AND index_name = ? AND term IN (?`+strings.Repeat(`, ?`, len(terms)-1)+`)`, args...)
	if err != nil {
		return st, fmt.Errorf("rag terms of %s/%s: %w", namespace, index, err)
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
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("rag terms of %s/%s: %w", namespace, index, err)
	}
	return st, nil
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
	_, err = t.q.ExecContext(ctx, `INSERT INTO rag_documents
		(tenant_id, namespace, index_name, source, document, uri, title, hash, metadata, chunks, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, namespace, index_name, source, document) DO UPDATE
		SET uri = excluded.uri, title = excluded.title, hash = excluded.hash, metadata = excluded.metadata,
			chunks = excluded.chunks, updated_at = excluded.updated_at`,
		t.tenant, d.Namespace, d.Index, d.Source, d.Document, d.URI, d.Title, d.Hash, string(meta), d.Chunks, d.UpdatedAt.UnixMicro())
	return wrapRAG("put rag document", d.Document, err)
}

// RAGDocumentDelete deletes a document and its chunks.
func (t *writeTx) RAGDocumentDelete(ctx context.Context, namespace, index, source, document string) error {
	if err := store.CheckRAGDocument(namespace, index, source, document); err != nil {
		return err
	}
	if _, err := t.q.ExecContext(ctx, `DELETE FROM rag_chunks WHERE tenant_id = ? AND namespace = ? AND index_name = ?
		AND source = ? AND document = ?`, t.tenant, namespace, index, source, document); err != nil {
		return wrapRAG("delete rag chunks", document, err)
	}
	_, err := t.q.ExecContext(ctx, `DELETE FROM rag_documents WHERE tenant_id = ? AND namespace = ? AND index_name = ?
		AND source = ? AND document = ?`, t.tenant, namespace, index, source, document)
	return wrapRAG("delete rag document", document, err)
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
	var embArg any
	if emb != nil {
		embArg = string(emb)
	}
	_, err = t.q.ExecContext(ctx, `INSERT INTO rag_chunks
		(tenant_id, namespace, index_name, source, document, ordinal, hash, text, start_offset, end_offset, length, terms, embedding, metadata)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, namespace, index_name, source, document, ordinal) DO UPDATE
		SET hash = excluded.hash, text = excluded.text, start_offset = excluded.start_offset,
			end_offset = excluded.end_offset, length = excluded.length, terms = excluded.terms,
			embedding = excluded.embedding, metadata = excluded.metadata`,
		t.tenant, c.Namespace, c.Index, c.Source, c.Document, c.Ordinal, c.Hash, c.Text, c.Start, c.End, c.Length,
		string(terms), embArg, string(meta))
	return wrapRAG("put rag chunk", c.Document, err)
}

// RAGChunkDeleteFrom deletes a document's chunks from ordinal from on.
func (t *writeTx) RAGChunkDeleteFrom(ctx context.Context, namespace, index, source, document string, from int) error {
	if err := store.CheckRAGDocument(namespace, index, source, document); err != nil {
		return err
	}
	_, err := t.q.ExecContext(ctx, `DELETE FROM rag_chunks WHERE tenant_id = ? AND namespace = ? AND index_name = ?
		AND source = ? AND document = ? AND ordinal >= ?`, t.tenant, namespace, index, source, document, from)
	return wrapRAG("delete rag chunks", document, err)
}

// RAGTermAdjust adds deltas to the index's document frequencies.
func (t *writeTx) RAGTermAdjust(ctx context.Context, namespace, index string, deltas map[string]int64) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	for term, d := range deltas {
		if d == 0 {
			continue
		}
		if _, err := t.q.ExecContext(ctx, `INSERT INTO rag_terms AS r (tenant_id, namespace, index_name, term, df)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant_id, namespace, index_name, term) DO UPDATE SET df = r.df + excluded.df`,
			t.tenant, namespace, index, term, d); err != nil {
			return fmt.Errorf("adjust rag term of %s/%s: %w", namespace, index, err)
		}
		if d < 0 {
			if _, err := t.q.ExecContext(ctx, `DELETE FROM rag_terms WHERE tenant_id = ? AND namespace = ? AND index_name = ?
				AND term = ? AND df <= 0`, t.tenant, namespace, index, term); err != nil {
				return fmt.Errorf("adjust rag term of %s/%s: %w", namespace, index, err)
			}
		}
	}
	return nil
}

// RAGIndexPurge deletes every row of an index.
func (t *writeTx) RAGIndexPurge(ctx context.Context, namespace, index string) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	for _, table := range []string{"rag_chunks", "rag_documents", "rag_terms"} {
		if _, err := t.q.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND namespace = ? AND index_name = ?`,
			t.tenant, namespace, index); err != nil {
			return fmt.Errorf("purge %s of %s/%s: %w", table, namespace, index, err)
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
