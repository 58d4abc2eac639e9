package gcfloor

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name        string
		live, floor uint64
		base, want  int
	}{
		{"small live heap: the floor sets the goal", 4 * mib, 256 * mib, 400, 6300},
		{"rounded up, never short of the floor", 3 * mib, 10 * mib, 100, 234},
		{"live heap above the floor: base", 300 * mib, 256 * mib, 400, 400},
		{"base already reaches past the floor", 100 * mib, 256 * mib, 400, 400},
		{"live heap equal to the floor", 256 * mib, 256 * mib, 100, 100},
		{"nothing live yet", 0, 256 * mib, 400, maxPercent},
		{"a ratio past the bound", 1, 1 << 40, 100, maxPercent},
		{"a huge floor does not overflow", 1 << 20, 1 << 62, 100, maxPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Percent(tt.live, tt.floor, tt.base)
			if got != tt.want {
				t.Fatalf("Percent(%d, %d, %d) = %d, want %d", tt.live, tt.floor, tt.base, got, tt.want)
			}
			if got < maxPercent && tt.live*uint64(100+got)/100 < min(tt.floor, tt.live*uint64(100+tt.base)/100) {
				t.Fatalf("goal %d below the floor %d", tt.live*uint64(100+got)/100, tt.floor)
			}
		})
	}
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cycle collects and waits until the tuner has run after the collection.
func cycle(t *testing.T, adjusted <-chan int) int {
	t.Helper()
	runtime.GC()
	select {
	case p := <-adjusted:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("the tuner did not run after a collection")
		return 0
	}
}

// The tests below change the process's collector: not parallel.

func TestTunerKeepsTheGoalAtTheFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 64 << 20
	adjusted := make(chan int, 1)
	tu := start(floor, 100, adjusted)
	p := cycle(t, adjusted)
	if p <= 100 {
		t.Fatalf("percentage %d after a cycle with a live heap of %d bytes, want above the base 100", p, read(liveHeapMetric))
	}
	if goal := read("/gc/heap/goal:bytes"); goal < floor {
		t.Fatalf("heap goal %d after a cycle, want at least the floor %d", goal, floor)
	}
	if got := read("/gc/gogc:percent"); int(got) != p {
		t.Fatalf("GOGC %d, want the tuner's %d", got, p)
	}
	tu.Stop()
	if got := read("/gc/gogc:percent"); got != 100 {
		t.Fatalf("GOGC %d after Stop, want the base 100", got)
	}
	runtime.GC()
	if got := read("/gc/gogc:percent"); got != 100 {
		t.Fatalf("GOGC %d after a cycle past Stop, want the base 100", got)
	}
}

func TestTunerYieldsToALargeLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([]byte, 32<<20)
	adjusted := make(chan int, 1)
	tu := start(16<<20, 150, adjusted)
	defer tu.Stop()
	if p := cycle(t, adjusted); p != 150 {
		t.Fatalf("percentage %d with %d bytes live above a 16 MiB floor, want the base 150", p, read(liveHeapMetric))
	}
	runtime.KeepAlive(live)
}

func TestNoFloorSetsTheBaseOnly(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	adjusted := make(chan int, 1)
	tu := start(0, 250, adjusted)
	defer tu.Stop()
	runtime.GC()
	runtime.GC()
	select {
	case p := <-adjusted:
		t.Fatalf("the tuner ran (percentage %d) without a floor", p)
	default:
	}
	if got := read("/gc/gogc:percent"); got != 250 {
		t.Fatalf("GOGC %d, want 250", got)
	}
}

func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		want      uint64
		wantFound bool
	}{
		{"no cgroup files", nil, 0, false},
		{"cgroup v2 without a limit", map[string]string{"memory.max": "max\n"}, 0, false},
		{"cgroup v2 limit", map[string]string{"memory.max": "536870912\n"}, 512 << 20, true},
		{"cgroup v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"cgroup v1 limit", map[string]string{"memory/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, true},
		{"garbage is no limit", map[string]string{"memory.max": "lots\n"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tt.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, found := MemoryLimit(root)
			if found != tt.wantFound || (found && got != tt.want) {
				t.Fatalf("MemoryLimit = %d, %v; want %d, %v", got, found, tt.want, tt.wantFound)
			}
		})
	}
	t.Run("GOMEMLIMIT counts too", func(t *testing.T) {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(300 << 20))
		got, found := MemoryLimit(t.TempDir())
		if !found || got != 300<<20 {
			t.Fatalf("MemoryLimit = %d, %v; want %d, true", got, found, 300<<20)
		}
	})
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"512B", 512, false},
		{"64KiB", 64 << 10, false},
		{"256MiB", 256 << 20, false},
		{" 1GiB ", 1 << 30, false},
		{"2TiB", 2 << 40, false},
		{"", 0, true},
		{"256MB", 0, true},
		{"-1", 0, true},
		{"1.5GiB", 0, true},
		{"99999999999TiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
