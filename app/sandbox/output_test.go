package sandbox

import (
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
