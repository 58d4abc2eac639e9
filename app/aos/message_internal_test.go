package aos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIDEqual(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{name: "same string", a: "x", b: "x", want: true},
		{name: "other string", a: "x", b: "y"},
		{name: "same number", a: json.Number("7"), b: json.Number("7"), want: true},
		{name: "same value written differently", a: json.Number("7"), b: json.Number("7.0"), want: true},
		{name: "exponent", a: json.Number("700"), b: json.Number("7e2"), want: true},
		{name: "other number", a: json.Number("7"), b: json.Number("8")},
		{name: "string is not a number", a: "7", b: json.Number("7")},
		{name: "number is not a string", a: json.Number("7"), b: "7"},
		{name: "null is no id", a: nil, b: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, idEqual(tt.a, tt.b))
		})
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", truncate("short", 10))
	require.Equal(t, "abc…", truncate("abcdef", 3))
	// "é" is two bytes; cutting inside it backs off to the character start.
	require.Equal(t, "a…", truncate("aébc", 2))
	long := truncate(strings.Repeat("€", 100), 200)
	require.True(t, strings.HasSuffix(long, "…"))
	require.LessOrEqual(t, len(long), 200+len("…"))
}
