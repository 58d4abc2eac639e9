package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// countingStore is a real store that records the size of every batch of
// tool-call writes it commits and whether its commit was durable. With a
// gate, Sync waits until the gate is closed.
type countingStore struct {
	store.Store
	gate    chan struct{}
	mu      sync.Mutex
	batches []int
	durable []bool
}

func (s *countingStore) WriteCalls(ctx context.Context, tenant string, ws []*store.CallWrite, durable bool) error {
	s.mu.Lock()
	s.batches = append(s.batches, len(ws))
	s.durable = append(s.durable, durable)
	s.mu.Unlock()
	return s.Store.WriteCalls(ctx, tenant, ws, durable)
}

func (s *countingStore) Sync(ctx context.Context) error {
	if s.gate != nil {
		<-s.gate
	}
	return s.Store.Sync(ctx)
}

func (s *countingStore) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

func (s *countingStore) durables() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.durable...)
}

// newTestRecorder returns a recorder with one writer over a fresh SQLite
// store whose group-commit wait is a minute: a test that waits for it
// shows as a hang, not as a slower pass.
func newTestRecorder(t *testing.T) (*recorder, *countingStore) {
	t.Helper()
	st, err := backend.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	cs := &countingStore{Store: st}
	r := newRecorder(cs, 1)
	r.groupWait = time.Minute
	t.Cleanup(func() {
		r.close()
		_ = st.Close()
	})
	return r, cs
}

// eventWrite is a tool-call write of one event.
func eventWrite(i int) *store.CallWrite {
	return &store.CallWrite{Events: []events.Event{{Type: events.ToolCallRequested, Namespace: "default", Subject: fmt.Sprintf("ToolCall/tc-%d", i)}}}
}

// callWithin runs the write and fails the test when it does not return
// within d.
func callWithin(t *testing.T, r *recorder, w *store.CallWrite, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.call(context.Background(), "acme", w, false) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(d):
		t.Fatalf("the write did not commit within %s: the writer waited for writes that were not coming", d)
	}
}

func TestRecorderGroupsWritesOfCallsInFlight(t *testing.T) {
	t.Parallel()
	r, cs := newTestRecorder(t)
	// Sixteen calls in flight: the writer waits for half of them.
	for range 16 {
		m := r.mark("acme")
		defer m.set(false)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			w := eventWrite(i)
			if err := r.call(context.Background(), "acme", w, false); err != nil {
				t.Error(err)
			}
			if len(w.Inserted) != 1 {
				t.Errorf("write %d: %d events inserted, want 1", i, len(w.Inserted))
			}
		})
	}
	wg.Wait()
	require.Equal(t, []int{8}, cs.sizes(), "the eight writes of sixteen calls in flight share one transaction")
}

func TestRecorderDoesNotWaitBelowGroupMin(t *testing.T) {
	t.Parallel()
	r, cs := newTestRecorder(t)
	for range groupMin - 1 {
		m := r.mark("acme")
		defer m.set(false)
	}
	callWithin(t, r, eventWrite(1), 30*time.Second)
	require.Equal(t, []int{1}, cs.sizes())
}

func TestRecorderCountsOnlyCallsInFlight(t *testing.T) {
	t.Parallel()
	r, cs := newTestRecorder(t)
	// Calls that finished, or wait for an approver, are not in flight:
	// a lone write after them commits at once.
	for range 2 * groupMin {
		m := r.mark("acme")
		m.set(false)
		m.set(false) // unsetting twice counts once
	}
	require.Zero(t, r.inflight[0].Load())
	var m mark
	m.set(true) // a call without a recorder's mark counts nowhere
	callWithin(t, r, eventWrite(1), 30*time.Second)
	require.Equal(t, []int{1}, cs.sizes())
}

func TestRecorderGatherEndsAtShutdown(t *testing.T) {
	t.Parallel()
	st, err := backend.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	r := newRecorder(st, 1)
	r.groupWait = time.Hour
	for range 16 {
		r.mark("acme")
	}
	w := &write{ctx: context.Background(), tenant: "acme", cw: eventWrite(1), done: make(chan error, 1)}
	r.shards[0] <- w
	// The writer takes the write and waits for seven more that never
	// come, until the gateway shuts down: then it commits what it has.
	require.Eventually(t, func() bool { return len(r.shards[0]) == 0 }, 30*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() {
		r.close()
		close(closed)
	}()
	select {
	case err := <-w.done:
		require.NoError(t, err)
		require.Len(t, w.cw.Inserted, 1)
	case <-time.After(30 * time.Second):
		t.Fatal("the write was not committed at shutdown")
	}
	<-closed
	// After close, writes are refused instead of waiting for ever.
	require.ErrorContains(t, r.call(context.Background(), "acme", eventWrite(2), false), "shutting down")
}

// newGatedRecorder returns a recorder with one writer over a fresh SQLite
// store whose Sync waits until the test closes its gate.
func newGatedRecorder(t *testing.T) (*recorder, *countingStore) {
	t.Helper()
	st, err := backend.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	gs := &countingStore{Store: st, gate: make(chan struct{})}
	r := newRecorder(gs, 1)
	t.Cleanup(func() {
		select {
		case <-gs.gate:
		default:
			close(gs.gate)
		}
		r.close()
		_ = st.Close()
	})
	return r, gs
}

func TestRecorderAnswersCommittedWritesBeforeTheirFlush(t *testing.T) {
	t.Parallel()
	r, gs := newGatedRecorder(t)
	// A batch committed under load, without waiting for its flush: the
	// write that needs only the commit is answered at once, the other
	// only once Sync says the batch is durable.
	committed := &write{ctx: context.Background(), tenant: "acme", cw: eventWrite(1), committed: true, done: make(chan error, 1)}
	durable := &write{ctx: context.Background(), tenant: "acme", cw: eventWrite(2), done: make(chan error, 1)}
	r.commitCalls([]*write{committed, durable}, false)
	select {
	case err := <-committed.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a committed-only write waited for the flush of its batch")
	}
	select {
	case err := <-durable.done:
		t.Fatalf("a write was answered (%v) before its batch was durable", err)
	default:
	}
	close(gs.gate)
	require.NoError(t, <-durable.done)
	require.Len(t, durable.cw.Inserted, 1)
	require.Equal(t, []bool{false}, gs.durables())
}

func TestRecorderNeverWaitsForTheFlushOfCommittedOnlyWrites(t *testing.T) {
	t.Parallel()
	r, gs := newGatedRecorder(t)
	// Alone in the queue, a write that needs durability commits durably
	// (no Sync); one that needs only its commit does not wait for the
	// flush either way. The gate stays shut: a Sync would hang.
	done := make(chan error, 2)
	go func() {
		done <- r.call(context.Background(), "acme", eventWrite(1), true)
		done <- r.call(context.Background(), "acme", eventWrite(2), false)
	}()
	for range 2 {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("a lone write waited for Sync")
		}
	}
	require.Equal(t, []bool{false, true}, gs.durables(), "the committed-only write's batch is not durable, the other's is")
}
