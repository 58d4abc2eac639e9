package cli

import "runtime/debug"

// serverGCPercent is the garbage collector's target (GOGC) for the commands
// that serve (up) or measure serving (bench). A serving process keeps a
// small live heap (configuration snapshots, caches) and allocates fast (every
// tool call decodes, copies and encodes its record), so at Go's default of
// 100 it collects several times a second and spends about a tenth of its
// processor time doing so. At 400 the heap may grow to five times what is
// live, tens of megabytes, and the tool gateway spends about 15 % less
// processor time per call at saturation (docs/performance.md). Set GOGC,
// and GOMEMLIMIT under a memory limit, to decide otherwise.
const serverGCPercent = 400

// tuneGC sets the collector's target for a serving process, unless GOGC is
// set in the environment.
func tuneGC(lookup func(string) (string, bool)) {
	if v, ok := lookup("GOGC"); ok && v != "" {
		return
	}
	debug.SetGCPercent(serverGCPercent)
}
