package cli

import (
	"runtime/debug"
	"testing"
)

// Not parallel: the collector's target is the process's.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tests := []struct {
		name string
		env  map[string]string
		want int
	}{
		{"default", nil, serverGCPercent},
		{"empty GOGC", map[string]string{"GOGC": ""}, serverGCPercent},
		{"GOGC set by the operator", map[string]string{"GOGC": "50"}, 100},
	}
	for _, tt := range tests {
		debug.SetGCPercent(100)
		tuneGC(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if got := debug.SetGCPercent(100); got != tt.want {
			t.Errorf("%s: GC percent %d, want %d", tt.name, got, tt.want)
		}
	}
}
