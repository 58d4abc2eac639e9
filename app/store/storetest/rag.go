package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func ragChunk(source, doc string, ordinal int, text string, terms map[string]int) store.RAGChunk {
	return store.RAGChunk{Namespace: "default", Index: "docs", Source: source, Document: doc, Ordinal: ordinal,
		Hash: "h-" + text, Text: text, Start: ordinal * 10, End: ordinal*10 + len(text), Length: len(terms),
		Terms: terms, Metadata: map[string]string{"lang": "en"}}
}

func ragWrite(t *testing.T, s store.Store, tenant string, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), tenant, fn))
}

func ragChunks(t *testing.T, s store.Store, tenant string, q store.RAGChunkQuery) []store.RAGChunk {
	t.Helper()
	var out []store.RAGChunk
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.RAGChunkList(ctx, q)
		return err
	}))
	return out
}

func ragStats(t *testing.T, s store.Store, tenant string, terms ...string) store.RAGStats {
	t.Helper()
	var st store.RAGStats
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		st, err = r.RAGTermStats(ctx, "default", "docs", terms)
		return err
	}))
	return st
}

// testRAG: documents, chunks and term statistics round-trip, chunks are
// replaced by ordinal, deleted by document and from an ordinal on, and
// term frequencies that reach zero disappear.
func testRAG(t *testing.T, s store.Store) {
	tenant := NewTenant()
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := store.RAGDocument{Namespace: "default", Index: "docs", Source: "handbook", Document: "a.md",
		URI: "file:///a.md", Title: "A", Hash: "hash-1", Metadata: map[string]string{"team": "ops"}, Chunks: 2, UpdatedAt: now}
	withEmb := ragChunk("handbook", "a.md", 1, "refund policy", map[string]int{"refund": 1, "policy": 1})
	withEmb.Embedding = []float32{0.5, -1, 2}
	ragWrite(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.RAGDocumentPut(ctx, doc))
		require.NoError(t, tx.RAGChunkPut(ctx, ragChunk("handbook", "a.md", 0, "shipping times", map[string]int{"shipping": 1, "times": 1})))
		require.NoError(t, tx.RAGChunkPut(ctx, withEmb))
		require.NoError(t, tx.RAGChunkPut(ctx, ragChunk("faq", "q1", 0, "refund refund", map[string]int{"refund": 2})))
		return tx.RAGTermAdjust(ctx, "default", "docs", map[string]int64{"shipping": 1, "times": 1, "refund": 2, "policy": 1})
	})

	var docs []store.RAGDocument
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		docs, err = r.RAGDocumentList(ctx, "default", "docs")
		return err
	}))
	require.Equal(t, []store.RAGDocument{doc}, docs)

	all := ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs"})
	require.Len(t, all, 3)
	require.Equal(t, "faq", all[0].Source, "ordered by source, document, ordinal")
	require.Equal(t, withEmb, all[2])
	require.Nil(t, all[1].Embedding)
	require.Len(t, ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs", Sources: []string{"handbook"}}), 2)
	require.Len(t, ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs", Source: "faq", Document: "q1"}), 1)
	require.Empty(t, ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "other"}))

	// Postings: which chunks hold the terms, and the chunks by key.
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		ps, err := r.RAGPostingList(ctx, store.RAGPostingQuery{Namespace: "default", Index: "docs", Terms: []string{"refund", "absent"}})
		require.NoError(t, err)
		require.ElementsMatch(t, []store.RAGPosting{
			{RAGChunkKey: store.RAGChunkKey{Source: "faq", Document: "q1"}, Term: "refund", TF: 2, Length: 1},
			{RAGChunkKey: store.RAGChunkKey{Source: "handbook", Document: "a.md", Ordinal: 1}, Term: "refund", TF: 1, Length: 2},
		}, ps)
		ps, err = r.RAGPostingList(ctx, store.RAGPostingQuery{Namespace: "default", Index: "docs", Terms: []string{"refund"}, Sources: []string{"faq"}})
		require.NoError(t, err)
		require.Len(t, ps, 1)
		got, err := r.RAGChunkGet(ctx, "default", "docs", []store.RAGChunkKey{
			{Source: "handbook", Document: "a.md", Ordinal: 1}, {Source: "nope", Document: "x"}, {Source: "faq", Document: "q1"}})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, withEmb, got[0])
		require.Equal(t, "q1", got[1].Document)
		return nil
	}))

	st := ragStats(t, s, tenant, "refund", "shipping", "absent")
	require.Equal(t, map[string]int64{"refund": 2, "shipping": 1}, st.DF)
	require.EqualValues(t, 3, st.Chunks)
	require.EqualValues(t, 2+2+1, st.TotalLength)

	// Replace ordinal 1, drop ordinal 1 on, drop the faq document.
	ragWrite(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.RAGChunkPut(ctx, ragChunk("handbook", "a.md", 1, "returns", map[string]int{"returns": 1})))
		got, err := tx.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: "default", Index: "docs", Source: "handbook", Document: "a.md"})
		require.NoError(t, err)
		require.Equal(t, "returns", got[1].Text, "a write is visible in its transaction")
		require.NoError(t, tx.RAGChunkDeleteFrom(ctx, "default", "docs", "handbook", "a.md", 1))
		require.NoError(t, tx.RAGDocumentDelete(ctx, "default", "docs", "faq", "q1"))
		require.NoError(t, tx.RAGDocumentDelete(ctx, "default", "docs", "faq", "never-there"))
		return tx.RAGTermAdjust(ctx, "default", "docs", map[string]int64{"refund": -2, "policy": -1})
	})
	all = ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs"})
	require.Len(t, all, 1)
	require.NoError(t, s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		ps, err := r.RAGPostingList(ctx, store.RAGPostingQuery{Namespace: "default", Index: "docs", Terms: []string{"refund", "returns", "shipping"}})
		require.NoError(t, err)
		require.Equal(t, []store.RAGPosting{{RAGChunkKey: store.RAGChunkKey{Source: "handbook", Document: "a.md"}, Term: "shipping", TF: 1, Length: 2}}, ps,
			"postings of replaced and deleted chunks are gone")
		return nil
	}))
	require.Equal(t, "shipping times", all[0].Text)
	require.Equal(t, map[string]int64{"shipping": 1}, ragStats(t, s, tenant, "refund", "policy", "shipping").DF)

	// A failed transaction leaves nothing behind.
	err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.RAGChunkPut(ctx, ragChunk("handbook", "b.md", 0, "x", map[string]int{"x": 1})))
		return store.ErrConflict
	})
	require.ErrorIs(t, err, store.ErrConflict)
	require.Len(t, ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs"}), 1)

	// Bad keys are refused.
	err = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.RAGChunkPut(ctx, store.RAGChunk{Namespace: "default", Index: "docs"})
	})
	require.ErrorIs(t, err, store.ErrRAGInvalid)

	ragWrite(t, s, tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.RAGIndexPurge(ctx, "default", "docs")
	})
	require.Empty(t, ragChunks(t, s, tenant, store.RAGChunkQuery{Namespace: "default", Index: "docs"}))
	require.Empty(t, ragStats(t, s, tenant, "shipping").DF)
}

// testRAGIsolation: one tenant's RAG rows are invisible to, and untouched
// by, another's.
func testRAGIsolation(t *testing.T, s store.Store) {
	a, b := NewTenant(), NewTenant()
	ragWrite(t, s, a, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.RAGChunkPut(ctx, ragChunk("src", "d", 0, "secret plans", map[string]int{"secret": 1, "plans": 1})))
		return tx.RAGTermAdjust(ctx, "default", "docs", map[string]int64{"secret": 1, "plans": 1})
	})
	require.Empty(t, ragChunks(t, s, b, store.RAGChunkQuery{Namespace: "default", Index: "docs"}))
	require.Empty(t, ragStats(t, s, b, "secret").DF)
	ragWrite(t, s, b, func(ctx context.Context, tx store.Tx) error {
		require.NoError(t, tx.RAGDocumentDelete(ctx, "default", "docs", "src", "d"))
		require.NoError(t, tx.RAGTermAdjust(ctx, "default", "docs", map[string]int64{"secret": -1}))
		return tx.RAGIndexPurge(ctx, "default", "docs")
	})
	require.Len(t, ragChunks(t, s, a, store.RAGChunkQuery{Namespace: "default", Index: "docs"}), 1)
	require.Equal(t, map[string]int64{"secret": 1}, ragStats(t, s, a, "secret").DF)
}
