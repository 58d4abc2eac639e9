package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/cli"
)

// TestUpRefusesPlaintextOffLoopback checks that `up` refuses, before it
// opens anything, to serve plaintext on a non-loopback address.
func TestUpRefusesPlaintextOffLoopback(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"wildcard without TLS", []string{"up", "--listen-host", "0.0.0.0"}, "--insecure-allow-plaintext"},
		{"cert without key", []string{"up", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			env := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Now: time.Now,
				LookupEnv: func(k string) (string, bool) {
					if k == "WARDEN_HOME" {
						return home, true
					}
					return "", false
				}}
			code := cli.RunWith(context.Background(), env, append([]string{"warden"}, tc.args...))
			require.Equal(t, cli.ExitUsage, code, errb.String())
			require.Contains(t, errb.String(), tc.want)
			require.NotContains(t, out.String(), "Warden is starting")
		})
	}
}
