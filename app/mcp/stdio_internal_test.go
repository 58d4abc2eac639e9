package mcp

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

// readLines reads everything a jsonLines passes on, one byte per Read
// when oneByte is set (messages arrive in pieces on a pipe).
func readLines(in []byte, oneByte bool) ([]byte, error) {
	var r io.Reader = bytes.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	return io.ReadAll(&jsonLines{r: io.NopCloser(r)})
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		wantOut  string
		wantLine string // "" when valid
	}{
		{name: "messages", in: "{\"id\":1}\n[{\"id\":2}]\r\n\n  {\"id\":3}\n", wantOut: "{\"id\":1}\n[{\"id\":2}]\r\n\n  {\"id\":3}\n"},
		{name: "banner first", in: "Server ready\n{\"id\":1}\n", wantOut: "", wantLine: "line 1 "},
		{name: "log line between messages", in: "{\"id\":1}\nINFO listening\n", wantOut: "{\"id\":1}\n", wantLine: "line 2 "},
		{name: "pretty-printed JSON", in: "{\n  \"id\": 1\n}\n", wantOut: "{\n  ", wantLine: "line 2 "},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				out, err := readLines([]byte(tt.in), oneByte)
				require.Equal(t, tt.wantOut, string(out))
				if tt.wantLine == "" {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, errNotJSONRPC)
				require.ErrorContains(t, err, tt.wantLine)
				require.NotContains(t, err.Error(), "listening", "the error never quotes what the server wrote")
			})
		}
	}
}

// FuzzJSONLines: whatever a server writes, the reader passes on a prefix
// of it, and fails only on a line that does not start a JSON value.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n"), false)
	f.Add([]byte("hello\n{}"), true)
	f.Add([]byte(" \t\r\n[1]\n x"), false)
	f.Fuzz(func(t *testing.T, in []byte, oneByte bool) {
		out, err := readLines(in, oneByte)
		if !bytes.HasPrefix(in, out) {
			t.Fatalf("passed on %q, not a prefix of %q", out, in)
		}
		if err != nil && !errors.Is(err, errNotJSONRPC) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && len(out) != len(in) {
			t.Fatalf("stopped at %d of %d bytes without an error", len(out), len(in))
		}
		if err != nil {
			rest := in[len(out):]
			if c := rest[0]; c == '{' || c == '[' || c == '\n' || c == ' ' || c == '\t' || c == '\r' {
				t.Fatalf("refused %q at a byte that may start a line: %q", in, c)
			}
		}
	})
}

func TestRestartDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want time.Duration
	}{
		{n: 1, want: 0},
		{n: 2, want: restartMin},
		{n: 3, want: 2 * restartMin},
		{n: 50, want: restartMax},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, restartDelay(tt.n), "restart %d", tt.n)
	}
}
