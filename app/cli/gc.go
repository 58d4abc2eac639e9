package cli

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"

	"github.com/warden-dev/warden/app/gcfloor"
)

// The runtime settings of the commands that serve (up) or measure serving
// (bench); docs/operations.md, "Memory, processors and the garbage
// collector", says why. Each yields to the standard variable an operator
// sets.
const (
	// serverGCPercent is the collector's target (GOGC) unless GOGC is set.
	// A serving process keeps a small live heap and allocates fast (every
	// tool call decodes, copies and encodes its record): at Go's default
	// of 100 it spends about a tenth of its processor time collecting, at
	// 400 about 15 % less processor time per call at saturation.
	serverGCPercent = 400
	// defaultHeapFloor is the heap goal the collector keeps at least
	// (WARDEN_GC_HEAP_FLOOR). The live heap is a few megabytes, so even at
	// 400 the goal is a few dozen and the collector runs several times a
	// second under load; every cycle slows the calls in flight, and at
	// 1,000 tool calls a second the cycles were most of the gateway's p99.
	// The floor makes them rarer by the same factor as it raises the goal.
	defaultHeapFloor = 256 << 20
	// envHeapFloor sets the floor ("0" turns it off).
	envHeapFloor = "WARDEN_GC_HEAP_FLOOR"
	// cgroupRoot is where the container's memory limit is read.
	cgroupRoot = "/sys/fs/cgroup"
)

// runtimeSettings is what tuneRuntime set, for the start-up banner.
type runtimeSettings struct {
	// GCPercent is the collector's target; negative: collection off.
	GCPercent int
	// HeapFloor is the heap goal kept at least (0: none).
	HeapFloor uint64
	// Procs is GOMAXPROCS.
	Procs int
	// stop ends the heap floor's tuning (up and bench stop it when they
	// return, so a test that runs them twice has one tuner at a time).
	stop func()
}

func (r runtimeSettings) String() string {
	gc := "GOGC off"
	if r.GCPercent >= 0 {
		gc = "GOGC " + strconv.Itoa(r.GCPercent)
		if r.HeapFloor > 0 {
			gc += fmt.Sprintf(", heap floor %d MiB", r.HeapFloor>>20)
		}
	}
	return fmt.Sprintf("%s, GOMAXPROCS %d", gc, r.Procs)
}

// tuneRuntime sets the collector's target (serverGCPercent unless GOGC is
// set), keeps its heap goal at or above the floor (WARDEN_GC_HEAP_FLOOR,
// default defaultHeapFloor, at most a quarter of a memory limit), and, on
// the embedded store on two cores or more, runs one more processor than the
// machine has cores unless GOMAXPROCS is set: SQLite's writes and syncs are
// blocking system calls, and the Go runtime leaves a processor attached to
// a goroutine in one for up to 10–20 ms before others may use it when
// another processor is idle now and then. A checkpoint's sync took tens of
// milliseconds, which on two cores left the gateway one processor for that
// long, once a second. On one core the spare processor buys no parallelism
// and costs a thread wake-up on nearly every hand-off between goroutines
// (and with none idle, the runtime takes a processor back from a system
// call at its next check): there a process runs one.
func tuneRuntime(lookup func(string) (string, bool), embedded bool) (runtimeSettings, error) {
	floor := uint64(defaultHeapFloor)
	if v, ok := lookup(envHeapFloor); ok && v != "" {
		n, err := gcfloor.ParseSize(v)
		if err != nil {
			return runtimeSettings{}, usagef("%s: %v", envHeapFloor, err)
		}
		floor = n
	}
	if limit, ok := gcfloor.MemoryLimit(cgroupRoot); ok {
		floor = min(floor, limit/4)
	}
	percent := serverGCPercent
	if v, ok := lookup("GOGC"); ok && v != "" {
		// The operator's setting, as the runtime read it at start.
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		percent = int(s[0].Value.Uint64())
		if v == "off" {
			percent = -1
		}
	}
	stop := func() {}
	if percent < 0 {
		floor = 0
	} else {
		stop = gcfloor.Start(floor, percent).Stop
	}
	if v, ok := lookup("GOMAXPROCS"); !ok || v == "" {
		// From the runtime's default (the cores, or the container's CPU
		// limit), whatever an earlier call set.
		runtime.SetDefaultGOMAXPROCS()
		if n := runtime.GOMAXPROCS(0); embedded && n >= 2 {
			runtime.GOMAXPROCS(n + 1)
		}
	}
	return runtimeSettings{GCPercent: percent, HeapFloor: floor, Procs: runtime.GOMAXPROCS(0), stop: stop}, nil
}
