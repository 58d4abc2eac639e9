package router_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/cli"
)

// TestCLI runs `warden models capabilities` and `warden route explain`
// against the router.
func TestCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.oa.Close()
	r := do(t, http.MethodPost, e.url+"/v1/model/respond", e.bot(), chat(map[string]any{"execution": "ex-cli"}), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	home := t.TempDir()
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errOut, LookupEnv: func(k string) (string, bool) {
			switch k {
			case "WARDEN_HOME":
				return home, true
			case "WARDEN_SERVER":
				return e.cpURL, true
			case "WARDEN_TOKEN":
				return e.admin, true
			case "WARDEN_ROUTER":
				return e.url, true
			}
			return "", false
		}}
		code := cli.RunWith(t.Context(), env, append([]string{"warden"}, args...))
		return out.String(), errOut.String(), code
	}
	out, errOut, code := run("models", "capabilities")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "ROUTE ID")
	require.Regexp(t, `primary\s+local:gpt-4o\s+yes\s+yes`, out)

	out, errOut, code = run("route", "explain", "bot", "--execution", "ex-cli")
	require.Zero(t, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Contains(t, lines[0], "succeeded by claude")
	require.Contains(t, lines[1], "1. primary")
	require.Contains(t, lines[1], "failed (error): provider unreachable: connection refused")
	require.Contains(t, lines[2], "2. claude")
	require.Contains(t, lines[2], "selected")

	_, errOut, code = run("route", "explain", "bot", "--execution", "nope")
	require.NotZero(t, code)
	require.Contains(t, errOut, "no routing decision")

	_, _, code = run("route", "explain", "bot")
	require.NotZero(t, code, "--execution is required")
}
