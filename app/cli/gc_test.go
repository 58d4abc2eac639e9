package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/warden-dev/warden/app/gcfloor"
)

// Not parallel: the collector's target and GOMAXPROCS are the process's.
func TestTuneRuntime(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.SetDefaultGOMAXPROCS()
	cores := runtime.GOMAXPROCS(0)
	spare := cores
	if cores >= 2 {
		spare = cores + 1
	}
	floor := uint64(defaultHeapFloor)
	if limit, ok := gcfloor.MemoryLimit(cgroupRoot); ok {
		floor = min(floor, limit/4)
	}
	tests := []struct {
		name     string
		env      map[string]string
		embedded bool
		want     runtimeSettings
		wantErr  string
	}{
		{"embedded store", nil, true, runtimeSettings{GCPercent: serverGCPercent, HeapFloor: floor, Procs: spare}, ""},
		{"Postgres", nil, false, runtimeSettings{GCPercent: serverGCPercent, HeapFloor: floor, Procs: cores}, ""},
		{"empty variables are unset", map[string]string{"GOGC": "", "GOMAXPROCS": "", envHeapFloor: ""}, true,
			runtimeSettings{GCPercent: serverGCPercent, HeapFloor: floor, Procs: spare}, ""},
		{"floor off", map[string]string{envHeapFloor: "0"}, false, runtimeSettings{GCPercent: serverGCPercent, Procs: cores}, ""},
		{"floor set", map[string]string{envHeapFloor: "32MiB"}, false, runtimeSettings{GCPercent: serverGCPercent, HeapFloor: min(32<<20, floor), Procs: cores}, ""},
		// The test binary's GOGC is the runtime's default, 100, whatever
		// the variable says: the setting the runtime read is kept.
		{"GOGC set by the operator", map[string]string{"GOGC": "100"}, false, runtimeSettings{GCPercent: 100, HeapFloor: floor, Procs: cores}, ""},
		{"GOMAXPROCS set by the operator", map[string]string{"GOMAXPROCS": "2"}, true, runtimeSettings{GCPercent: serverGCPercent, HeapFloor: floor, Procs: cores}, ""},
		{"a floor that is no size", map[string]string{envHeapFloor: "lots"}, false, runtimeSettings{}, envHeapFloor},
	}
	for _, tt := range tests {
		runtime.SetDefaultGOMAXPROCS()
		debug.SetGCPercent(100)
		got, err := tuneRuntime(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, tt.embedded)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got.stop()
		if got.GCPercent != tt.want.GCPercent || got.HeapFloor != tt.want.HeapFloor || got.Procs != tt.want.Procs {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		if p := runtime.GOMAXPROCS(0); p != tt.want.Procs {
			t.Errorf("%s: GOMAXPROCS %d, want %d", tt.name, p, tt.want.Procs)
		}
		if p := debug.SetGCPercent(100); p != tt.want.GCPercent {
			t.Errorf("%s: GOGC %d after stop, want %d", tt.name, p, tt.want.GCPercent)
		}
	}
}

func TestRuntimeSettingsString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   runtimeSettings
		want string
	}{
		{runtimeSettings{GCPercent: 400, HeapFloor: 256 << 20, Procs: 3}, "GOGC 400, heap floor 256 MiB, GOMAXPROCS 3"},
		{runtimeSettings{GCPercent: 100, Procs: 2}, "GOGC 100, GOMAXPROCS 2"},
		{runtimeSettings{GCPercent: -1, Procs: 2}, "GOGC off, GOMAXPROCS 2"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.in, got, tt.want)
		}
	}
}
