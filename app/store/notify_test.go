package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func TestNotifierNeverBlocks(t *testing.T) {
	t.Parallel()
	n := store.NewNotifier()
	defer n.Close()
	block := make(chan struct{})
	defer close(block)
	stopSlow := n.Listen(func(string) { <-block })
	defer stopSlow()

	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	stop := n.Listen(func(tenant string) {
		mu.Lock()
		defer mu.Unlock()
		seen[tenant] = true
		if seen["a"] && seen["b"] {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	})
	defer stop()
	for range 1000 {
		n.Notify("a") // coalesced while the slow listener is stuck
	}
	n.Notify("b")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the fast listener did not hear both tenants")
	}
}

func TestNotifierStopFromCallback(t *testing.T) {
	t.Parallel()
	n := store.NewNotifier()
	called := make(chan struct{}, 10)
	var stop func()
	var once sync.Once
	ready := make(chan struct{})
	stop = n.Listen(func(string) {
		<-ready
		once.Do(stop) // must not deadlock
		called <- struct{}{}
	})
	close(ready)
	n.Notify("a")
	<-called
	n.Notify("b")
	n.Close()
	require.Len(t, called, 0, "no call after stop")
	n.Notify("c") // after Close: no listeners, no panic
}

// TestNotifierGeneration: the generation moves before Notify returns, even
// while every listener is stuck, and only for the tenant signalled.
func TestNotifierGeneration(t *testing.T) {
	t.Parallel()
	n := store.NewNotifier()
	defer n.Close()
	block := make(chan struct{})
	defer close(block)
	stop := n.Listen(func(string) { <-block })
	defer stop()

	require.Zero(t, n.Generation("a"))
	n.Notify("a")
	require.Equal(t, uint64(1), n.Generation("a"))
	n.Notify("a")
	require.Equal(t, uint64(2), n.Generation("a"))
	require.Zero(t, n.Generation("b"))
}
