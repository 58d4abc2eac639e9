package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the percentage the tuner sets, so a nearly empty heap
// (a process that has just started) cannot ask for an absurd one.
const maxPercent = 1_000_000

const liveHeapMetric = "/gc/heap/live:bytes"

// Tuner keeps the heap goal at or above its floor until Stop.
type Tuner struct {
	floor uint64
	base  int
	// adjusted, when set (tests), is sent the percentage after every
	// cycle, unless it is full.
	adjusted chan<- int

	// mu orders an adjustment with Stop, so a stopped tuner never sets
	// GOGC again.
	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// sentinel is garbage from birth: its finalizer runs after the cycle that
// finds it unreachable and then re-arms it for the next one. It holds a
// pointer so the allocator never packs it into a tiny block shared with
// other objects, which would tie its finalizer to theirs.
type sentinel struct{ t *Tuner }

// Start sets GOGC to base at once and, after every collection, to the
// percentage that puts the next heap goal at the larger of floor and the
// goal base alone gives. floor 0 sets base and nothing more. Start is
// meant for one per process: two tuners would overwrite each other.
func Start(floor uint64, base int) *Tuner {
	return start(floor, base, nil)
}

func start(floor uint64, base int, adjusted chan<- int) *Tuner {
	t := &Tuner{floor: floor, base: base, adjusted: adjusted, percent: base,
		sample: []metrics.Sample{{Name: liveHeapMetric}}}
	debug.SetGCPercent(base)
	if floor == 0 {
		t.stopped = true
		return t
	}
	runtime.SetFinalizer(&sentinel{t: t}, (*sentinel).cycle)
	return t
}

// Stop ends the tuning and sets GOGC back to the base percentage.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	debug.SetGCPercent(t.base)
}

// cycle runs on the finalizer goroutine after a collection: it adjusts
// GOGC and re-arms itself, unless the tuner stopped.
func (s *sentinel) cycle() {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if p := Percent(live, t.floor, t.base); p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
	if t.adjusted != nil {
		select {
		case t.adjusted <- t.percent:
		default:
		}
	}
	runtime.SetFinalizer(s, (*sentinel).cycle)
}

// Percent is the GOGC that makes the goal live × (1 + GOGC/100) reach
// floor, or base when base already does.
func Percent(live, floor uint64, base int) int {
	if live == 0 {
		return maxPercent
	}
	if floor <= live {
		return base
	}
	// Past this ratio the percentage would reach the bound (and below it
	// floor*100 cannot overflow).
	if floor/live >= maxPercent/100 {
		return maxPercent
	}
	// Round up: the goal must not fall short of the floor.
	return max(int((floor*100+live-1)/live-100), base)
}
