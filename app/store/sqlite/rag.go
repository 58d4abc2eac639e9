package sqlite

import (
	"context"
	"database/sql"
	"errors"
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

// RAGPostingList returns the postings of the query's terms.
func (t *readTx) RAGPostingList(ctx context.Context, q store.RAGPostingQuery) ([]store.RAGPosting, error) {
	if err := store.CheckRAGIndex(q.Namespace, q.Index); err != nil {
		return nil, err
	}
	if len(q.Terms) == 0 {
		return nil, nil
	}
	query := `SELECT p.source, p.document, p.ordinal, p.term, p.tf, c.length FROM rag_postings p
		JOIN rag_chunks c ON c.tenant_id = p.tenant_id AND c.namespace = p.namespace AND c.index_name = p.index_name
			AND c.source = p.source AND c.document = p.document AND c.ordinal = p.ordinal
		WHERE p.tenant_id = ? AND p.namespace = ? AND p.index_name = ? AND p.term IN (?` + strings.Repeat(`, ?`, len(q.Terms)-1) + `)`
	args := []any{t.tenant, q.Namespace, q.Index}
	for _, term := range q.Terms {
		args = append(args, term)
	}
	if len(q.Sources) > 0 {
		query += ` AND p.source IN (?` + strings.Repeat(`, ?`, len(q.Sources)-1) + `)`
		for _, s := range q.Sources {
			args = append(args, s)
		}
	}
	rows, err := t.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("rag postings of %s/%s: %w", q.Namespace, q.Index, err)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rag postings of %s/%s: %w", q.Namespace, q.Index, err)
	}
	return out, nil
}

// RAGChunkGet returns the chunks named by keys, in their order.
func (t *readTx) RAGChunkGet(ctx context.Context, namespace, index string, keys []store.RAGChunkKey) ([]store.RAGChunk, error) {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return nil, err
	}
	out := make([]store.RAGChunk, 0, len(keys))
	for _, k := range keys {
		c := store.RAGChunk{Namespace: namespace, Index: index, Source: k.Source, Document: k.Document, Ordinal: k.Ordinal}
		var terms, meta string
		var emb sql.NullString
		err := t.q.QueryRowContext(ctx, `SELECT hash, text, start_offset, end_offset, length, terms, embedding, metadata
			FROM rag_chunks WHERE tenant_id = ? AND namespace = ? AND index_name = ? AND source = ? AND document = ? AND ordinal = ?`,
			t.tenant, namespace, index, k.Source, k.Document, k.Ordinal).
			Scan(&c.Hash, &c.Text, &c.Start, &c.End, &c.Length, &terms, &emb, &meta)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("rag chunk of %s/%s: %w", namespace, index, err)
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
	return out, nil
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
	for _, table := range []string{"rag_postings", "rag_chunks"} {
		if _, err := t.q.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND namespace = ? AND index_name = ?
			AND source = ? AND document = ?`, t.tenant, namespace, index, source, document); err != nil {
			return wrapRAG("delete "+table+" of", document, err)
		}
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
	if err != nil {
		return wrapRAG("put rag chunk", c.Document, err)
	}
	if _, err := t.q.ExecContext(ctx, `DELETE FROM rag_postings WHERE tenant_id = ? AND namespace = ? AND index_name = ?
		AND source = ? AND document = ? AND ordinal = ?`, t.tenant, c.Namespace, c.Index, c.Source, c.Document, c.Ordinal); err != nil {
		return wrapRAG("put rag postings", c.Document, err)
	}
	// Multi-row inserts of up to 100 postings: one statement per term
	// would dominate the cost of a refresh.
	const rowsPer = 100
	terms2 := make([]string, 0, len(c.Terms))
	for term := range c.Terms {
		terms2 = append(terms2, term)
	}
	for start := 0; start < len(terms2); start += rowsPer {
		part := terms2[start:min(start+rowsPer, len(terms2))]
		args := make([]any, 0, len(part)*8)
		for _, term := range part {
			args = append(args, t.tenant, c.Namespace, c.Index, term, c.Source, c.Document, c.Ordinal, c.Terms[term])
		}
		q := `INSERT INTO rag_postings (tenant_id, namespace, index_name, term, source, document, ordinal, tf) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?), `, len(part)), ", ")
		if _, err := t.q.ExecContext(ctx, q, args...); err != nil {
			return wrapRAG("put rag postings", c.Document, err)
		}
	}
	return nil
}

// RAGChunkDeleteFrom deletes a document's chunks from ordinal from on.
func (t *writeTx) RAGChunkDeleteFrom(ctx context.Context, namespace, index, source, document string, from int) error {
	if err := store.CheckRAGDocument(namespace, index, source, document); err != nil {
		return err
	}
	for _, table := range []string{"rag_postings", "rag_chunks"} {
		if _, err := t.q.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND namespace = ? AND index_name = ?
			AND source = ? AND document = ? AND ordinal >= ?`, t.tenant, namespace, index, source, document, from); err != nil {
			return wrapRAG("delete "+table+" of", document, err)
		}
	}
	return nil
}

// RAGTermAdjust adds deltas to the index's document frequencies, in
// multi-row upserts of up to 100 terms.
func (t *writeTx) RAGTermAdjust(ctx context.Context, namespace, index string, deltas map[string]int64) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	terms := make([]string, 0, len(deltas))
	negative := false
	for term, d := range deltas {
		if d != 0 {
			terms = append(terms, term)
			negative = negative || d < 0
		}
	}
	const rowsPer = 100
	for start := 0; start < len(terms); start += rowsPer {
		part := terms[start:min(start+rowsPer, len(terms))]
		args := make([]any, 0, len(part)*5)
		for _, term := range part {
			args = append(args, t.tenant, namespace, index, term, deltas[term])
		}
		q := `INSERT INTO rag_terms AS r (tenant_id, namespace, index_name, term, df) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?), `, len(part)), ", ") +
			` ON CONFLICT (tenant_id, namespace, index_name, term) DO UPDATE SET df = r.df + excluded.df`
		if _, err := t.q.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("adjust rag terms of %s/%s: %w", namespace, index, err)
		}
	}
	if negative {
		if _, err := t.q.ExecContext(ctx, `DELETE FROM rag_terms WHERE tenant_id = ? AND namespace = ? AND index_name = ? AND df <= 0`,
			t.tenant, namespace, index); err != nil {
			return fmt.Errorf("adjust rag terms of %s/%s: %w", namespace, index, err)
		}
	}
	return nil
}

// RAGIndexPurge deletes every row of an index.
func (t *writeTx) RAGIndexPurge(ctx context.Context, namespace, index string) error {
	if err := store.CheckRAGIndex(namespace, index); err != nil {
		return err
	}
	for _, table := range []string{"rag_postings", "rag_chunks", "rag_documents", "rag_terms"} {
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
