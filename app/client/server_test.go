package client

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseServer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want, err string
	}{
		{name: "full URL", in: "https://warden.example.com/", want: "https://warden.example.com"},
		{name: "loopback without scheme", in: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{name: "localhost without scheme", in: "localhost:8080", want: "http://localhost:8080"},
		{name: "IPv6 loopback without scheme", in: "[::1]:8080", want: "http://[::1]:8080"},
		{name: "remote host without scheme", in: "warden.example.com", want: "https://warden.example.com"},
		{name: "remote host and port without scheme", in: "10.0.0.5:8443/base", want: "https://10.0.0.5:8443/base"},
		{name: "empty", in: " ", err: "server address is empty"},
		{name: "other scheme", in: "ftp://x", err: "scheme must be http or https"},
		{name: "no host", in: "http://", err: "is not a URL such as"},
		{name: "garbage", in: "http://[::1", err: "is not a URL such as"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := parseServer(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "first path segment")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, u.String())
		})
	}
}

func FuzzParseServer(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", "https://w.example.com", "localhost", "[::1]:1", "x://y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseServer(s)
		if err == nil && (u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")) {
			t.Fatalf("parseServer(%q) = %v without error", s, u)
		}
	})
}
