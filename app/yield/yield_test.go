package yield_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-dev/warden/app/yield"
)

// spin keeps the processor busy for d.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// chunksPerRoundTrip runs, on one processor, a goroutine that works in
// chunks of 100 µs and calls step between them, and measures how many
// chunks it got through while a loopback round trip waited: the median of
// 20 round trips.
func chunksPerRoundTrip(t *testing.T, step func()) int {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var chunks atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-stop:
				return
			default:
			}
			spin(100 * time.Microsecond)
			chunks.Add(1)
			step()
		}
	}()
	var counts []int
	buf := make([]byte, 1)
	for range 20 {
		before := chunks.Load()
		if _, err := c.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, int(chunks.Load()-before))
	}
	close(stop)
	<-done
	slices.Sort(counts)
	return counts[len(counts)/2]
}

func TestYieldLetsNetworkInputIn(t *testing.T) {
	y := yield.New(0)
	defer y.Close()
	got := chunksPerRoundTrip(t, y.Yield)
	// Each side of the round trip waits at most for the chunk running
	// when its input arrived, and the one queued before it.
	if got > 6 {
		t.Errorf("a round trip waited for %d chunks of background work (median); want a few", got)
	}
	// The contrast that makes the package worth having (logged, not
	// asserted: it is the runtime's behaviour): with runtime.Gosched the
	// network is polled only by the runtime's monitor, every 10 ms, a
	// hundred chunks.
	if testing.Short() {
		return
	}
	if base := chunksPerRoundTrip(t, runtime.Gosched); base > got {
		t.Logf("with runtime.Gosched a round trip waited for %d chunks (median), with Yield %d", base, got)
	}
}

func TestYieldFallsBack(t *testing.T) {
	var nilY *yield.Yielder
	nilY.Yield()
	(&yield.Yielder{}).Yield()
	y := yield.New(0)
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
	y.Yield() // closed: runtime.Gosched
	yield.Yield(context.Background())
}

// TestYieldFromContext checks that Yield(ctx) uses the Yielder ctx
// carries: with it, network input gets in between two chunks of work.
func TestYieldFromContext(t *testing.T) {
	y := yield.New(0)
	defer y.Close()
	ctx := yield.NewContext(context.Background(), y)
	if got := chunksPerRoundTrip(t, func() { yield.Yield(ctx) }); got > 6 {
		t.Errorf("a round trip waited for %d chunks of background work (median); want a few", got)
	}
}

func TestYieldConcurrent(t *testing.T) {
	y := yield.New(0)
	defer y.Close()
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				y.Yield()
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// TestYieldQuantum checks that a Yielder with a quantum yields at most
// once a quantum: the calls in between return at once, and the first call
// after it yields.
func TestYieldQuantum(t *testing.T) {
	y := yield.New(time.Hour)
	defer y.Close()
	y.Yield()
	// Only a call that returns without waiting for the poller can run
	// a million times in well under the hour.
	start := time.Now()
	for range 1_000_000 {
		y.Yield()
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a million calls within the quantum took %v", d)
	}
	short := yield.New(time.Millisecond)
	defer short.Close()
	short.Yield()
	time.Sleep(2 * time.Millisecond)
	if got := chunksPerRoundTrip(t, short.Yield); got > 20 {
		t.Errorf("with a 1 ms quantum a round trip waited for %d chunks of 100 µs (median); want about 10 at most", got)
	}
}

func BenchmarkYield(b *testing.B) {
	y := yield.New(0)
	defer y.Close()
	for b.Loop() {
		y.Yield()
	}
}
