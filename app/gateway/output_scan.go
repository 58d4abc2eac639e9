package gateway

import (
	"slices"
	"strings"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/scan"
)

// scanReport is what step 9's scanners found.
type scanReport struct {
	r       scan.Report
	scanned bool
}

// Blocked reports whether the result must be withheld.
func (s scanReport) blocked() bool { return s.scanned && s.r.Blocked }

// Any reports whether anything was found, redacted or truncated.
func (s scanReport) Any() bool { return s.scanned && (len(s.Counts()) > 0) }

// Redacted reports whether the result was changed.
func (s scanReport) Redacted() bool { return s.Any() }

// Counts returns the findings by kind, for events (never the values).
func (s scanReport) Counts() map[string]int { return reportCounts(s.r) }

// Summary names the kinds found.
func (s scanReport) Summary() string { return reportSummary(s.r) }

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
	out, rep := scan.Apply(v, opts)
	return out, scanReport{r: rep, scanned: true}
}

func reportCounts(r scan.Report) map[string]int {
	if len(r.Counts) == 0 && !r.Truncated {
		return nil
	}
	out := make(map[string]int, len(r.Counts)+1)
	for k, n := range r.Counts {
		out[string(k)] = n
	}
	if r.Truncated {
		out["truncated"] = 1
	}
	return out
}

func reportSummary(r scan.Report) string {
	kinds := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}
