package rag_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/rag"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

// TestRefreshOfADeletedIndex: an index deleted while a refresh fetches its
// sources, and created again under the same name, gets none of the old
// refresh's documents; the refresh ends with ErrIndexGone (a not-found,
// which the refresh job takes as done).
func TestRefreshOfADeletedIndex(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fetching, release := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(fetching)
				<-release
				_, _ = io.WriteString(w, refundDoc)
			}))
			t.Cleanup(srv.Close)
			b := setup(t, url(t))
			b.apply(tenantA, index("kb", "web"),
				obj(resource.KindKnowledgeSource, "web", map[string]any{"type": "url", "url": srv.URL + "/page"}))

			done := make(chan error, 1)
			go func() {
				_, err := b.svc.Refresh(context.Background(), tenantA, "default", "kb")
				done <- err
			}()
			<-fetching
			key := resource.Key{Kind: resource.KindRAGIndex, Namespace: "default", Name: "kb"}
			require.NoError(t, b.st.Update(context.Background(), tenantA, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.ResourceDelete(ctx, key, ""); err != nil {
					return err
				}
				return tx.RAGIndexPurge(ctx, "default", "kb")
			}))
			b.apply(tenantA, index("kb", "web"))
			close(release)

			err := <-done
			require.True(t, errors.Is(err, rag.ErrIndexGone), "got %v", err)
			require.True(t, errors.Is(err, rag.ErrNotFound))
			require.NoError(t, b.st.View(context.Background(), tenantA, func(ctx context.Context, r store.Reader) error {
				docs, err := r.RAGDocumentList(ctx, "default", "kb")
				require.Empty(t, docs, "the new index starts empty")
				return err
			}))
		})
	}
}
