package approvals

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLastEventID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want uint64
	}{
		{"none", "", 0},
		{"an id", "41", 41},
		{"spaces", " 7 ", 7},
		{"negative", "-3", 0},
		{"not a number", "abc", 0},
		{"too large", "18446744073709551616", 0},
		{"past 2^53", strconv.FormatUint(1<<53+1, 10), 0},
		{"too long", "000000000000000000001", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, ParseLastEventID(tc.in))
		})
	}
}

// FuzzParseLastEventID: any header gives an id the stream can go on from
// without overflowing.
func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "1", "9007199254740992", "-1", "1e9", " 12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := ParseLastEventID(s); n > 1<<53 {
			t.Fatalf("ParseLastEventID(%q) = %d", s, n)
		}
	})
}
