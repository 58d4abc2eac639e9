package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAllowHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entry   string
		want    hostRule
		wantErr string
	}{
		{name: "bare host allows web ports", entry: "Example.COM.", want: hostRule{host: "example.com", ports: []string{"80", "443"}}},
		{name: "host and port", entry: "api.example.com:8443", want: hostRule{host: "api.example.com", ports: []string{"8443"}}},
		{name: "IPv4 and port", entry: "127.0.0.1:8080", want: hostRule{host: "127.0.0.1", ports: []string{"8080"}}},
		{name: "bracketed IPv6 and port", entry: "[::1]:8080", want: hostRule{host: "::1", ports: []string{"8080"}}},
		{name: "bare IPv6", entry: "::1", want: hostRule{host: "::1", ports: []string{"80", "443"}}},
		{name: "bracketed IPv6", entry: "[::1]", want: hostRule{host: "::1", ports: []string{"80", "443"}}},
		{name: "wildcard", entry: "*.example.com:443", want: hostRule{host: "example.com", wildcard: true, ports: []string{"443"}}},
		{name: "leading zeros in port", entry: "example.com:0443", want: hostRule{host: "example.com", ports: []string{"443"}}},
		{name: "empty", entry: "", wantErr: "must be host or host:port"},
		{name: "URL", entry: "https://example.com/", wantErr: "without scheme or path"},
		{name: "port zero", entry: "example.com:0", wantErr: "port must be 1-65535"},
		{name: "port too big", entry: "example.com:65536", wantErr: "port must be 1-65535"},
		{name: "port not a number", entry: "example.com:https", wantErr: "port must be 1-65535"},
		{name: "inner wildcard", entry: "a*.example.com", wantErr: "only a leading"},
		{name: "wildcard alone", entry: "*.", wantErr: "host must be"},
		{name: "user info", entry: "user@example.com", wantErr: "without scheme or path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseHostRule(tt.entry)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseAllowHosts_reportsEveryEntry(t *testing.T) {
	t.Parallel()
	_, errs := parseAllowHosts([]string{"ok.example.com", "bad/", "also:bad:port:x", "x:0"})
	require.Len(t, errs, 2+1)
	require.ErrorContains(t, errs[0], "allowHosts[1]")
	require.ErrorContains(t, errs[2], "allowHosts[3]")
}

func TestAllowlistAllows(t *testing.T) {
	t.Parallel()
	allow, errs := parseAllowHosts([]string{"example.com", "api.example.org:8443", "*.svc.example.net", "127.0.0.1:9000", "[::1]:9001"})
	require.Empty(t, errs)
	tests := []struct {
		host, port string
		want       bool
	}{
		{"example.com", "443", true},
		{"EXAMPLE.com.", "80", true},
		{"example.com", "8080", false},
		{"www.example.com", "443", false},
		{"api.example.org", "8443", true},
		{"api.example.org", "443", false},
		{"a.svc.example.net", "443", true},
		{"a.b.svc.example.net", "80", true},
		{"svc.example.net", "443", false},
		{"evilsvc.example.net", "443", false},
		{"127.0.0.1", "9000", true},
		{"127.0.0.1", "09000", true},
		{"127.0.0.2", "9000", false},
		{"::1", "9001", true},
		{"[::1]", "9001", true},
		{"::ffff:127.0.0.1", "9000", true},
		{"localhost", "9000", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, allow.allows(tt.host, tt.port), "%s:%s", tt.host, tt.port)
	}
	require.False(t, allowlist(nil).allows("example.com", "443"), "the zero allowlist allows nothing")
}

func FuzzParseHostRule(f *testing.F) {
	for _, s := range []string{"example.com", "example.com:8080", "[::1]:1", "*.a.b", "::1", "1.2.3.4:65535", "a:b:c", "[", "*."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		r, err := parseHostRule(entry)
		if err != nil {
			return
		}
		require.NotEmpty(t, r.host)
		require.NotEmpty(t, r.ports)
		if !r.wildcard {
			// A parsed rule allows its own host on its own ports.
			require.True(t, allowlist{r}.allows(r.host, r.ports[0]), "%q parsed to %+v", entry, r)
		}
	})
}
