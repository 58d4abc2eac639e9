package jobs_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/jobs"
)

type ragRecorder struct {
	mu    sync.Mutex
	calls []string
	ran   chan struct{}
}

func (r *ragRecorder) RefreshJob(_ context.Context, tenant, ns, index string) error {
	r.mu.Lock()
	r.calls = append(r.calls, tenant+"/"+ns+"/"+index)
	r.mu.Unlock()
	r.ran <- struct{}{}
	return nil
}

// TestRAGRefreshJob: a refresh enqueued before the queue runs is kept
// (a process that restarts runs it), a second request while it waits is
// the same job, and one after it finished is a new job.
func TestRAGRefreshJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	open := func(rec *ragRecorder) (*jobs.Queue, *jobs.RAG) {
		workers := river.NewWorkers()
		r := jobs.NewRAG(workers)
		q, err := jobs.OpenSQLite(ctx, path, jobs.Config{Workers: workers, Logger: testLogger(t),
			Queues: map[string]river.QueueConfig{jobs.QueueRAG: jobs.RAGQueueConfig()}})
		require.NoError(t, err)
		r.SetQueue(q)
		r.Bind(rec)
		return q, r
	}

	// First process: enqueue twice, never start, stop.
	first := &ragRecorder{ran: make(chan struct{}, 4)}
	q1, r1 := open(first)
	a, err := r1.EnqueueRAGRefresh(ctx, "acme", "default", "help")
	require.NoError(t, err)
	require.False(t, a.Duplicate)
	b, err := r1.EnqueueRAGRefresh(ctx, "acme", "default", "help")
	require.NoError(t, err)
	require.True(t, b.Duplicate, "a refresh of the same index while one waits is that job")
	require.Equal(t, a.ID, b.ID)
	other, err := r1.EnqueueRAGRefresh(ctx, "acme", "default", "other")
	require.NoError(t, err)
	require.NotEqual(t, a.ID, other.ID)
	require.NoError(t, q1.Stop(ctx))

	// Second process on the same database runs both, once each.
	second := &ragRecorder{ran: make(chan struct{}, 4)}
	q2, r2 := open(second)
	require.NoError(t, q2.Start(ctx))
	t.Cleanup(func() { _ = q2.Stop(context.Background()) })
	for range 2 {
		select {
		case <-second.ran:
		case <-time.After(wait):
			t.Fatal("the refresh jobs did not run after the restart")
		}
	}
	second.mu.Lock()
	require.ElementsMatch(t, []string{"acme/default/help", "acme/default/other"}, second.calls)
	second.mu.Unlock()
	require.Empty(t, first.calls)

	// Once finished, a new request is a new job.
	require.Eventually(t, func() bool {
		c, err := r2.EnqueueRAGRefresh(ctx, "acme", "default", "help")
		return err == nil && !c.Duplicate && c.ID != a.ID
	}, wait, 20*time.Millisecond)
}
