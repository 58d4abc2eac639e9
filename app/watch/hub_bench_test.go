package watch_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/watch"
)

const tenant = "bench"

func openStore(tb testing.TB, kind string) store.Store {
	tb.Helper()
	url := "sqlite://" + filepath.Join(tb.TempDir(), "w.db")
	if kind == "postgres" {
		url = pgtest.NewDatabase(tb)
	}
	st, err := backend.Open(context.Background(), url, backend.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

func model(name string) *resource.Object {
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindModel,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default"},
		Spec:     map[string]any{"provider": "openai", "model": name}}
}

func write(tb testing.TB, st store.Store, name string) {
	tb.Helper()
	require.NoError(tb, st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ResourceCreate(ctx, model(name))
		return err
	}))
}

// watchers starts n watchers and returns a channel per watcher that carries
// the arrival time of every non-bookmark event.
func watchers(tb testing.TB, hub *watch.Hub, n int) []chan time.Time {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	out := make([]chan time.Time, n)
	var ready sync.WaitGroup
	for i := range out {
		ch := make(chan time.Time, 1024)
		out[i] = ch
		ready.Add(1)
		go func() {
			first := true
			_ = hub.Watch(ctx, tenant, nil, "", func(ev api.WatchEvent) error {
				if first {
					first = false
					ready.Done()
					return nil
				}
				ch <- time.Now()
				return nil
			})
		}()
	}
	ready.Wait()
	return out
}

// BenchmarkWatchFanOut1000 measures how long one committed change takes to
// reach all of 1,000 concurrent watchers; it reports the p50 and p99 of the
// per-watcher delivery latency across every iteration, in milliseconds.
func BenchmarkWatchFanOut1000(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			st := openStore(b, kind)
			hub := watch.NewHub(st, slog.New(slog.DiscardHandler))
			b.Cleanup(hub.Close)
			chans := watchers(b, hub, 1000)
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				write(b, st, fmt.Sprintf("m-%d", i))
				for _, ch := range chans {
					lat = append(lat, (<-ch).Sub(start))
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

func TestHubDeliversToEveryWatcherInOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := openStore(t, kind)
			hub := watch.NewHub(st, slog.New(slog.DiscardHandler))
			t.Cleanup(hub.Close)
			chans := watchers(t, hub, 50)
			for i := range 20 {
				write(t, st, fmt.Sprintf("m-%d", i))
			}
			for _, ch := range chans {
				for range 20 {
					select {
					case <-ch:
					case <-time.After(10 * time.Second):
						t.Fatal("a watcher missed a change")
					}
				}
			}
		})
	}
}

func TestHubCatchesUpPastTheRing(t *testing.T) {
	t.Parallel()
	st := openStore(t, "sqlite")
	hub := watch.NewHub(st, slog.New(slog.DiscardHandler))
	t.Cleanup(hub.Close)
	write(t, st, "first")
	var from string
	require.NoError(t, st.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		v, err := r.CurrentVersion(ctx)
		from = fmt.Sprint(v)
		return err
	}))
	// More changes than the ring holds, written before anyone watches.
	require.NoError(t, st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for i := range 5000 {
			if _, err := tx.ResourceCreate(ctx, model(fmt.Sprintf("bulk-%d", i))); err != nil {
				return err
			}
		}
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	err := hub.Watch(ctx, tenant, nil, from, func(ev api.WatchEvent) error {
		if ev.Type != api.EventBookmark {
			got++
			if got == 5000 {
				cancel()
			}
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 5000, got)
}
