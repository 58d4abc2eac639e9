package gcfloor

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimit is the memory the process may use: the smaller of Go's own
// limit (GOMEMLIMIT, debug.SetMemoryLimit) and the container's (cgroup v2
// memory.max, or v1 memory.limit_in_bytes, under cgroupRoot, normally
// /sys/fs/cgroup). ok is false when neither sets one.
func MemoryLimit(cgroupRoot string) (limit uint64, ok bool) {
	limit = math.MaxUint64
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		limit, ok = uint64(l), true
	}
	for _, name := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(cgroupRoot, name))
		if err != nil {
			continue
		}
		// "max" (v2) or a number near the largest int64 (v1) means none.
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n >= math.MaxInt64/2 {
			continue
		}
		if n < limit {
			limit, ok = n, true
		}
	}
	return limit, ok
}

// ParseSize reads a size as GOMEMLIMIT writes it: a number of bytes with
// an optional unit B, KiB, MiB, GiB or TiB ("256MiB", "1GiB", "0").
func ParseSize(s string) (uint64, error) {
	orig := s
	s = strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if n, found := strings.CutSuffix(s, u.suffix); found {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, &SizeError{Value: orig}
	}
	if n > math.MaxUint64/mult {
		return 0, &SizeError{Value: orig}
	}
	return n * mult, nil
}

// SizeError reports a size ParseSize cannot read.
type SizeError struct{ Value string }

func (e *SizeError) Error() string {
	return "size " + strconv.Quote(e.Value) + " is not a number of bytes with an optional unit B, KiB, MiB, GiB or TiB"
}
