package gateway

import (
	"slices"
	"strings"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/scan"
)

// scanReport is what step 9's scanners found, summarized once: counts by
// kind for events (never the values), and the kinds for messages.
type scanReport struct {
	blocked bool
	// counts is nil when nothing was found, redacted or truncated.
	counts  map[string]int
	summary string
}

// found reports whether anything was found, redacted or truncated.
func (s scanReport) found() bool { return len(s.counts) > 0 }

// scanOutput applies a Tool's safety settings to a result.
func scanOutput(v any, safety *resource.ToolSafety) (any, scanReport) {
	opts := scan.Options{Injection: scan.Mode(resource.DefaultScanInjection)}
	if safety != nil {
		opts.RedactPII = safety.RedactPII
		if safety.ScanInjection != "" {
			opts.Injection = scan.Mode(safety.ScanInjection)
		}
		opts.MaxBytes = safety.MaxOutputBytes
	}
	out, r := scan.Apply(v, opts)
	rep := scanReport{blocked: r.Blocked}
	if len(r.Counts) == 0 && !r.Truncated {
		return out, rep
	}
	rep.counts = make(map[string]int, len(r.Counts)+1)
	kinds := make([]string, 0, len(r.Counts))
	for k, n := range r.Counts {
		rep.counts[string(k)] = n
		kinds = append(kinds, string(k))
	}
	if r.Truncated {
		rep.counts["truncated"] = 1
	}
	slices.Sort(kinds)
	rep.summary = strings.Join(kinds, ", ")
	return out, rep
}
