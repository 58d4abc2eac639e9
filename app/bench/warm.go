package bench

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// A warm-up before the measured phases. A serving process tuned as up
// tunes itself lets its heap grow to the floor (256 MiB) between two
// collections: until it has done so once, every new span is memory the
// kernel maps on first touch, and those page faults (a tenth of the child's
// CPU at 500 calls/s in a profile on a virtual machine) belong to a process
// that has just started, not to one that serves. So a warm-up lasts two
// collections: the first may still come at the small goal of a young
// process, after which the floor sets the goal, and the second comes once
// the heap has grown to it. From then on the process reuses the memory it
// has mapped.
const (
	// warmCollections is the collections a warm-up waits for, counted from
	// its start (none when the collector is off).
	warmCollections = 2
	// warmMinCalls and warmMax bound a warm-up.
	warmMinCalls = 500
	warmMax      = 30 * time.Second
	warmCallers  = 16
)

// gcCycles is the number of collections this process has completed, and
// whether its collector is on.
func gcCycles() (uint64, bool) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	// GOGC=off reads as -1 converted.
	return s[0].Value.Uint64(), int64(s[1].Value.Uint64()) >= 0
}

// localCycles is gcCycles as warm asks it, for this process.
func localCycles() (uint64, bool, error) {
	n, on := gcCycles()
	return n, on, nil
}

// warm calls fn from warmCallers closed-loop callers until cycles says
// the process being warmed has collected warmCollections times since the
// warm-up began (or that its collector is off), after at least
// warmMinCalls calls and at most warmMax. It returns the calls made and
// whether the collections were reached.
func warm(ctx context.Context, fn func(context.Context) error, cycles func() (uint64, bool, error)) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, warmMax)
	defer cancel()
	var calls atomic.Int64
	var done atomic.Bool
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		cancel()
	}
	start, on, err := cycles()
	if err != nil {
		return 0, false, fmt.Errorf("warm-up: %w", err)
	}
	var wg sync.WaitGroup
	for range warmCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() && ctx.Err() == nil {
				if err := fn(ctx); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				calls.Add(1)
			}
		}()
	}
	reached := !on
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil && (!reached || calls.Load() < warmMinCalls) {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		n, on, err := cycles()
		if err != nil {
			fail(err)
			break
		}
		reached = !on || n-start >= warmCollections
	}
	done.Store(true)
	wg.Wait()
	if firstErr != nil {
		return calls.Load(), false, fmt.Errorf("warm-up: %w", firstErr)
	}
	return calls.Load(), reached, nil
}

// warmedNote says how a warm-up ended.
func warmedNote(reached bool) string {
	if reached {
		return fmt.Sprintf("until that process had collected %d times meanwhile", warmCollections)
	}
	return fmt.Sprintf("stopped after %s, before that process had collected %d times", warmMax, warmCollections)
}
