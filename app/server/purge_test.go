package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

// TestDeletingMemoryOrRAGIndexDeletesItsItems checks that deleting a
// Memory deletes its items and deleting a RAGIndex its documents, chunks
// and terms, with the resource, while the ones not deleted keep theirs: a
// Memory or RAGIndex created again under the name starts empty.
func TestDeletingMemoryOrRAGIndexDeletesItsItems(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, newURL(t))
			r := b.apply(t, `apiVersion: warden.dev/v1alpha1
kind: KnowledgeSource
metadata: {name: handbook, namespace: default}
spec: {type: inline, documents: [{id: a, content: refunds}]}
---
apiVersion: warden.dev/v1alpha1
kind: RAGIndex
metadata: {name: docs, namespace: default}
spec: {sources: [handbook]}
---
apiVersion: warden.dev/v1alpha1
kind: RAGIndex
metadata: {name: kept, namespace: default}
spec: {sources: [handbook]}
---
apiVersion: warden.dev/v1alpha1
kind: Memory
metadata: {name: notes, namespace: default}
spec: {scope: namespace}
---
apiVersion: warden.dev/v1alpha1
kind: Memory
metadata: {name: kept, namespace: default}
spec: {scope: namespace}
`)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			ctx := context.Background()
			require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
				for _, m := range []string{"notes", "kept"} {
					if _, err := tx.MemoryItemInsert(ctx, store.MemoryItem{ID: "i1", Namespace: "default", Memory: m, Text: "remember"}); err != nil {
						return err
					}
				}
				for _, index := range []string{"docs", "kept"} {
					if err := tx.RAGDocumentPut(ctx, store.RAGDocument{Namespace: "default", Index: index, Source: "handbook", Document: "a", Hash: "h", Chunks: 1}); err != nil {
						return err
					}
					if err := tx.RAGChunkPut(ctx, store.RAGChunk{Namespace: "default", Index: index, Source: "handbook", Document: "a",
						Hash: "h", Text: "refunds", End: 7, Length: 1, Terms: map[string]int{"refunds": 1}}); err != nil {
						return err
					}
					if err := tx.RAGTermAdjust(ctx, "default", index, map[string]int64{"refunds": 1}); err != nil {
						return err
					}
				}
				return nil
			}))
			for _, path := range []string{"/v1/namespaces/default/memories/notes", "/v1/namespaces/default/ragindexes/docs"} {
				r := b.do(t, http.MethodDelete, path, "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
			}
			require.NoError(t, b.store.View(ctx, server.LocalTenant, func(ctx context.Context, rd store.Reader) error {
				items := func(memory string) int {
					got, err := rd.MemoryItemQuery(ctx, store.MemoryQuery{Namespace: "default", Memory: memory, IncludeSummarized: true})
					require.NoError(t, err)
					return len(got)
				}
				require.Zero(t, items("notes"), "the deleted Memory's items are gone")
				require.Equal(t, 1, items("kept"))
				docs := func(index string) (int, int, int) {
					d, err := rd.RAGDocumentList(ctx, "default", index)
					require.NoError(t, err)
					c, err := rd.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: "default", Index: index})
					require.NoError(t, err)
					s, err := rd.RAGTermStats(ctx, "default", index, []string{"refunds"})
					require.NoError(t, err)
					return len(d), len(c), len(s.DF)
				}
				d, c, terms := docs("docs")
				require.Zero(t, d+c+terms, "the deleted RAGIndex's documents, chunks and terms are gone")
				d, c, terms = docs("kept")
				require.Equal(t, []int{1, 1, 1}, []int{d, c, terms})
				return nil
			}))
		})
	}
}
