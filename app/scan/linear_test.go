package scan_test

import (
	"strings"
	"testing"
	"time"

	"github.com/warden-dev/warden/app/scan"
)

// TestPathologicalInputsStayLinear feeds 256 KiB of repeated fragments
// that once made a detector rescan the rest of the text from every
// position. Each input takes milliseconds when the scan is linear and
// tens of seconds when it is quadratic, so the generous bound does not
// flake on a loaded machine.
func TestPathologicalInputsStayLinear(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large inputs")
	}
	for _, frag := range []string{
		"eyJ-", "sk-aaaa-", "-----BEGIN RSA PRIVATE KEY-----\n", "a-", "a/", "+1", "wk_-",
		"[a](x", "![a](http://x", "</s>", "@a", "x@a.", "ignore ", "you are now ", "1 ", "1.",
		"(1", "::", "password:$", "Bearer ", "data:", "\u200b", "ab:", "AKIA",
	} {
		s := strings.Repeat(frag, (256<<10)/len(frag))
		start := time.Now()
		scan.Redact(s)
		scan.ScanInjection(s)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q x %d took %v", frag, len(s)/len(frag), d)
		}
	}
}
