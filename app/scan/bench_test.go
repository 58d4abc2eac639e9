package scan_test

import (
	"os"
	"testing"

	"github.com/warden-dev/warden/app/scan"
)

// The benchmarks run on a realistic tool result: seven issues of an issue
// tracker search, about 4 KiB of JSON (testdata/result_clean.json), and
// the same result with personal data, tokens and injections planted in it
// (testdata/result_findings.json). Redact and Scan take the JSON text as
// one string; Apply walks the decoded value, as the gateway does. Numbers
// are in the report of the commit that added the package.

func loadResult(b *testing.B, name string) string {
	b.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

var results = []struct{ name, file string }{
	{"clean", "result_clean.json"},
	{"findings", "result_findings.json"},
}

func BenchmarkRedact(b *testing.B) {
	for _, r := range results {
		b.Run(r.name, func(b *testing.B) {
			s := loadResult(b, r.file)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				scan.Redact(s)
			}
		})
	}
}

func BenchmarkScan(b *testing.B) {
	for _, r := range results {
		b.Run(r.name, func(b *testing.B) {
			s := loadResult(b, r.file)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				scan.ScanInjection(s)
			}
		})
	}
}

// BenchmarkApply is the whole step of the gateway: walk, redact, scan in
// redact mode, copy, and check the size against a 64 KiB limit.
func BenchmarkApply(b *testing.B) {
	opts := scan.Options{RedactPII: true, Injection: scan.ModeRedact, MaxBytes: 64 << 10}
	for _, r := range results {
		b.Run(r.name, func(b *testing.B) {
			s := loadResult(b, r.file)
			v := decode(b, s)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				scan.Apply(v, opts)
			}
		})
	}
}
