package sandbox

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		max           int64
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "under the cap", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly the cap", max: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "write crossing the cap", max: 4, writes: []string{"abc", "def"}, want: "abcd", wantTruncated: true},
		{name: "writes after the cap", max: 3, writes: []string{"abc", "def", "ghi"}, want: "abc", wantTruncated: true},
		{name: "zero cap keeps nothing", max: 0, writes: []string{"a"}, want: "", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &cappedBuffer{max: tt.max}
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				require.NoError(t, err, "the command's pipe must always be drained")
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tt.want, string(b.Bytes()))
			require.Equal(t, tt.wantTruncated, b.truncated)
		})
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		max         int
		writes      []string
		want        string
		wantDropped bool
	}{
		{name: "under the cap", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "older bytes go", max: 4, writes: []string{"abc", "def"}, want: "cdef", wantDropped: true},
		{name: "one write over the cap", max: 3, writes: []string{"abcdef"}, want: "def", wantDropped: true},
		{name: "zero cap keeps nothing", max: 0, writes: []string{"a"}, want: "", wantDropped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &tailBuffer{max: tt.max}
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tt.want, string(b.redacted(nil)))
			require.Equal(t, tt.wantDropped, b.dropped)
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		in               string
		values           []string
		headCut, tailCut bool
		want             string
	}{
		{name: "no values", in: "a secret", want: "a secret"},
		{name: "every occurrence", in: "k=s3cr3t and s3cr3t", values: []string{"s3cr3t"}, want: "k=[REDACTED] and [REDACTED]"},
		{name: "overlapping values are one marker", in: "abcXYZdef", values: []string{"abcXYZ", "XYZdef"}, want: "[REDACTED]"},
		{name: "empty value ignored", in: "abc", values: []string{""}, want: "abc"},
		{name: "end of a value at a cut start", in: "cr3t-value rest", values: []string{"s3cr3t-value"}, headCut: true, want: "[REDACTED] rest"},
		{name: "start of a value at a cut end", in: "token=s3cr", values: []string{"s3cr3t-value"}, tailCut: true, want: "token=[REDACTED]"},
		{name: "short fragments stay", in: "lue rest", values: []string{"s3cr3t-value"}, headCut: true, want: "lue rest"},
		{name: "fragments only where cut", in: "cr3t-value rest", values: []string{"s3cr3t-value"}, want: "cr3t-value rest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := []byte(tt.in)
			got := redact(in, tt.values, tt.headCut, tt.tailCut)
			require.Equal(t, tt.want, string(got))
			require.Equal(t, tt.in, string(in), "the input is not modified")
		})
	}
}

// FuzzRedact checks that no value survives redaction, whatever surrounds
// it.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("key=s3cr3t"), "s3cr3t", true, false)
	f.Add([]byte("3cr3ts3cr3t"), "s3cr3t", false, true)
	f.Fuzz(func(t *testing.T, b []byte, value string, headCut, tailCut bool) {
		// A value made of the marker's own characters could be spelled by
		// the marker; real secrets are not.
		if value == "" || strings.ContainsAny(value, "[]") || strings.Contains(redactedMarker, value) {
			t.Skip()
		}
		got := redact(b, []string{value}, headCut, tailCut)
		if bytes.Contains(got, []byte(value)) {
			t.Fatalf("redact(%q, %q) = %q still holds the value", b, value, got)
		}
	})
}
