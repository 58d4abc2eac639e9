package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/warden-dev/warden/app/cli"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

// fleet is the example fleet of the README's tour, relative to this
// package's directory (the working directory of `go test`).
const fleet = "../examples/fleet/"

var fleetTools = []string{
	"zendesk.search_tickets", "zendesk.reply", "stripe.refund", "github.create_issue",
	"workspace.write_file", "shell.exec", "k8s.scale_deployment",
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads, as with `get --watch`.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// env is the environment of one CLI run: WARDEN_HOME and whatever else the
// test sets. Nothing is read from the process environment, so a developer's
// ~/.warden or WARDEN_TOKEN cannot leak into a test.
func env(vars map[string]string, stdin string, stdout, stderr *syncBuffer) cli.Env {
	return cli.Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: stdout,
		Stderr: stderr,
		LookupEnv: func(k string) (string, bool) {
			v, ok := vars[k]
			return v, ok
		},
		Now: time.Now,
	}
}

// run runs the warden CLI in-process and waits for it.
func run(ctx context.Context, vars map[string]string, stdin string, args ...string) result {
	var out, errb syncBuffer
	code := cli.RunWith(ctx, env(vars, stdin, &out, &errb), append([]string{"warden"}, args...))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// controlPlane is a bootstrapped server on a loopback listener.
type controlPlane struct {
	url  string
	key  string
	home string // an empty WARDEN_HOME: credentials come from flags or env
}

// startControlPlane opens storeURL, bootstraps it as `warden up` does and
// serves the control plane on 127.0.0.1:0 until the test ends.
func startControlPlane(t *testing.T, storeURL string) *controlPlane {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	key, created, err := server.Bootstrap(ctx, st, time.Now)
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, strings.HasPrefix(key, "wk_"), "admin key %q", key)

	srv, err := server.New(server.Config{Store: st})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, st.Close())
	})
	return &controlPlane{url: "http://" + ln.Addr().String(), key: key, home: t.TempDir()}
}

// run runs the CLI against cp with --server and --token.
func (cp *controlPlane) run(ctx context.Context, stdin string, args ...string) result {
	args = append(args, "--server", cp.url, "--token", cp.key)
	return run(ctx, map[string]string{clientconfig.EnvHome: cp.home}, stdin, args...)
}

// closedURL returns the URL of a port that refuses connections. A TCP
// socket bound to it and never listening holds the port for the test: a
// port merely closed again could be taken by another test's listener.
func closedURL(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	return "http://127.0.0.1:" + strconv.Itoa(sa.(*unix.SockaddrInet4).Port)
}

const badTool = `apiVersion: warden.dev/v1alpha1
kind: Tool
metadata:
  name: bad.tool
spec:
  source: rest
  sideEffect: sends_email
  rest: {url: "https://example.com/x", method: POST}
`

const echoTool = `apiVersion: warden.dev/v1alpha1
kind: Tool
metadata:
  name: e2e.echo
spec:
  description: Echo the input.
  source: rest
  sideEffect: read_only
  rest: {url: "https://example.com/echo", method: POST}
  inputSchema: {type: object}
`

// TestTour walks the README's tour with the real CLI against the real
// server, once per store backend.
func TestTour(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name     string
		storeURL func(t *testing.T) string
	}{
		{name: "sqlite", storeURL: func(t *testing.T) string { return "sqlite://" + t.TempDir() + "/w.db" }},
		{name: "postgres", storeURL: func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tour(t, startControlPlane(t, b.storeURL(t)))
		})
	}
}

func tour(t *testing.T, cp *controlPlane) {
	ctx := t.Context()

	res := cp.run(ctx, "", "apply", "-f", fleet)
	require.Equal(t, cli.ExitOK, res.code, res)
	for _, line := range []string{
		"environment/dev unchanged\n", // created by the bootstrap
		"model/gpt-4o created\n", "model/claude-sonnet created\n",
		"memory/support-bot-working created\n",
		"knowledgesource/support-handbook created\n", "ragindex/support-kb created\n",
		"policy/model-guard created\n", "policy/refund-limits created\n", "policy/pii-output created\n",
		"agent/support-bot created\n",
		"deployment/support-bot-dev created\n", "deployment/support-bot-staging created\n",
		"compiledagentmanifest support-bot-g1 compiled\n",
	} {
		require.Contains(t, res.stdout, line)
	}
	for _, tool := range fleetTools {
		require.Contains(t, res.stdout, "tool/"+tool+" created\n")
	}
	require.Empty(t, res.stderr)

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(badTool), 0o600))
	closed := closedURL(t)

	// Read-only steps and rejected writes: they leave the store as the
	// apply left it, so they run in parallel.
	t.Run("read", func(t *testing.T) {
		tests := []struct {
			name     string
			args     []string
			vars     map[string]string // instead of --server/--token when set
			wantCode int
			wantOut  []string
			wantErr  []string
			check    func(t *testing.T, res result)
		}{
			{
				name: "get agents", args: []string{"get", "agents"},
				wantOut: []string{"NAME          MODEL    TOOLS   MANIFEST         AGE\n"},
				check: func(t *testing.T, res result) {
					require.Regexp(t, `(?m)^support-bot   gpt-4o   7       support-bot-g1   \d+s$`, res.stdout)
				},
			},
			{
				name: "get compiledagentmanifests", args: []string{"get", "compiledagentmanifests"},
				wantOut: []string{"support-bot-g1   support-bot   1            openai:gpt-4o   7"},
			},
			{
				name: "get manifest as yaml", args: []string{"get", "compiledagentmanifest", "support-bot-g1", "-o", "yaml"},
				wantOut: []string{
					"kind: CompiledAgentManifest\n", "    primary: openai:gpt-4o\n", "    - anthropic:claude-sonnet\n",
					"    - model-guard@1\n", "    - pii-output@1\n", "    - refund-limits@1\n",
				},
				check: func(t *testing.T, res result) {
					for _, tool := range fleetTools {
						require.Contains(t, res.stdout, "name: "+tool+"\n")
					}
					require.Len(t, regexp.MustCompile(`schemaSha: sha256:[0-9a-f]{64}\n`).FindAllString(res.stdout, -1), len(fleetTools))
				},
			},
			{
				name: "get tools as json", args: []string{"get", "tools", "-o", "json"},
				check: func(t *testing.T, res result) {
					var list struct {
						Kind  string `json:"kind"`
						Items []struct {
							Metadata struct{ Name string } `json:"metadata"`
							Spec     struct {
								SideEffect string `json:"sideEffect"`
							} `json:"spec"`
						} `json:"items"`
					}
					require.NoError(t, json.Unmarshal([]byte(res.stdout), &list), res.stdout)
					require.Equal(t, "ToolList", list.Kind)
					got := map[string]string{}
					for _, it := range list.Items {
						got[it.Metadata.Name] = it.Spec.SideEffect
					}
					require.Len(t, got, len(fleetTools))
					require.Equal(t, "financial", got["stripe.refund"])
					require.Equal(t, "read_only", got["zendesk.search_tickets"])
				},
			},
			{
				name: "get tools wide", args: []string{"get", "tools", "-o", "wide"},
				wantOut: []string{"COST-PER-CALL", "DESCRIPTION", "Refund all or part of a Stripe charge."},
				check: func(t *testing.T, res result) {
					require.Regexp(t, `(?m)^stripe\.refund\s+financial\s+rest\s+required\s+\d+s\s+0\.01\s`, res.stdout)
				},
			},
			{
				name: "describe agent", args: []string{"describe", "agent", "support-bot"},
				wantOut: []string{"Name:             support-bot\n", "Kind:             Agent\n", "Labels:           team=support\n", "    primary: gpt-4o\n", "  compiledManifest: support-bot-g1\n", "    reason: ManifestCompiled\n"},
			},
			{
				name: "diff without changes", args: []string{"diff", "-f", fleet},
				wantOut: []string{"0 to create, 0 to update, 21 unchanged\n"},
			},
			{
				name: "apply to prod is rejected", args: []string{"apply", "-f", fleet + "extra/deploy-prod.yaml"},
				wantCode: cli.ExitRejected,
				wantErr: []string{
					"error: 1 problem(s) found; nothing was written\n",
					"document 1 (Deployment support-bot-prod, ../examples/fleet/extra/deploy-prod.yaml): spec.environment: PolicyDenied: model openai:gpt-4o is denied in environment prod by policy model-guard@1",
					"[policy model-guard@1]",
				},
			},
			{
				name: "rejected apply wrote nothing", args: []string{"get", "deployment", "support-bot-prod"},
				wantCode: cli.ExitNotFound, wantErr: []string{"error: NotFound:"},
			},
			{
				name: "validate a bad file", args: []string{"validate", "-f", bad},
				wantCode: cli.ExitRejected, wantErr: []string{"document 1 (Tool bad.tool, " + bad + "): spec.sideEffect: NotSupported:"},
			},
			{
				name: "validate the fleet", args: []string{"validate", "-f", fleet},
			},
			{name: "get a missing agent", args: []string{"get", "agent", "nope"}, wantCode: cli.ExitNotFound, wantErr: []string{"error: NotFound:"}},
			{name: "get namespaces", args: []string{"get", "namespaces"}, wantOut: []string{"default"}},
			{name: "get environments", args: []string{"get", "environments"}, wantOut: []string{"staging   staging   prod"}},
			{name: "unknown kind", args: []string{"get", "widgets"}, wantCode: cli.ExitUsage},
			{
				name: "credentials from the environment", args: []string{"get", "agents"},
				vars:    map[string]string{"WARDEN_SERVER": cp.url, "WARDEN_TOKEN": cp.key},
				wantOut: []string{"support-bot"},
			},
			{
				name: "wrong token", args: []string{"get", "agents"},
				vars:     map[string]string{"WARDEN_SERVER": cp.url, "WARDEN_TOKEN": "wk_wrong"},
				wantCode: cli.ExitUnauthenticated, wantErr: []string{"error: Unauthenticated:", "WARDEN_TOKEN"},
			},
			{
				name: "no token", args: []string{"get", "agents"},
				vars:     map[string]string{"WARDEN_SERVER": cp.url},
				wantCode: cli.ExitUnauthenticated,
			},
			{
				name: "closed port", args: []string{"get", "agents"},
				vars:     map[string]string{"WARDEN_SERVER": closed, "WARDEN_TOKEN": cp.key},
				wantCode: cli.ExitUnreachable, wantErr: []string{"server unreachable at " + closed, "warden up"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				var res result
				if tt.vars != nil {
					vars := map[string]string{clientconfig.EnvHome: cp.home}
					for k, v := range tt.vars {
						vars[k] = v
					}
					res = run(t.Context(), vars, "", tt.args...)
				} else {
					res = cp.run(t.Context(), "", tt.args...)
				}
				require.Equal(t, tt.wantCode, res.code, res)
				for _, s := range tt.wantOut {
					require.Contains(t, res.stdout, s, res)
				}
				for _, s := range tt.wantErr {
					require.Contains(t, res.stderr, s, res)
				}
				if tt.check != nil {
					tt.check(t, res)
				}
			})
		}
	})

	t.Run("watch sees a concurrent apply", func(t *testing.T) {
		watchCtx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var out, errb syncBuffer
		done := make(chan int, 1)
		go func() {
			args := []string{"warden", "get", "tools", "--watch", "--server", cp.url, "--token", cp.key}
			done <- cli.RunWith(watchCtx, env(map[string]string{clientconfig.EnvHome: cp.home}, "", &out, &errb), args)
		}()
		// The list comes first, every item as ADDED.
		waitFor(t, done, &out, &errb, func(s string) bool {
			return strings.Contains(s, "EVENT") && strings.Count(s, "\nADDED ") == len(fleetTools)
		})
		require.NotContains(t, out.String(), "e2e.echo")

		res := cp.run(t.Context(), echoTool, "apply", "-f", "-")
		require.Equal(t, cli.ExitOK, res.code, res)
		require.Equal(t, "tool/e2e.echo created\n", res.stdout)
		waitFor(t, done, &out, &errb, func(s string) bool {
			return regexp.MustCompile(`(?m)^ADDED\s+e2e\.echo\s+read_only\s+rest\s+no\s`).MatchString(s)
		})

		res = cp.run(t.Context(), "", "delete", "tool", "e2e.echo")
		require.Equal(t, cli.ExitOK, res.code, res)
		waitFor(t, done, &out, &errb, func(s string) bool {
			return regexp.MustCompile(`(?m)^DELETED\s+e2e\.echo\s`).MatchString(s)
		})

		cancel()
		select {
		case code := <-done:
			require.Equal(t, cli.ExitOK, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		case <-time.After(10 * time.Second):
			t.Fatal("get --watch did not return after its context was cancelled")
		}
	})

	t.Run("delete then get", func(t *testing.T) {
		res := cp.run(t.Context(), "", "delete", "tool", "shell.exec")
		require.Equal(t, cli.ExitOK, res.code, res)
		require.Equal(t, "tool/shell.exec deleted\n", res.stdout)

		res = cp.run(t.Context(), "", "get", "tool", "shell.exec")
		require.Equal(t, cli.ExitNotFound, res.code, res)
		require.Contains(t, res.stderr, "error: NotFound:")

		res = cp.run(t.Context(), "", "delete", "tool", "shell.exec")
		require.Equal(t, cli.ExitNotFound, res.code, res)

		// The fleet now differs from what is stored: diff says so.
		res = cp.run(t.Context(), "", "diff", "-f", fleet)
		require.Equal(t, cli.ExitFailure, res.code, res)
		require.Contains(t, res.stdout, "+ tool/shell.exec (create)")
		require.Contains(t, res.stdout, "1 to create, 0 to update, 20 unchanged")
	})
}

// waitFor waits until cond holds for the output of a running command, or
// fails when the command ends first or 30 seconds pass.
func waitFor(t *testing.T, done <-chan int, out, errb *syncBuffer, cond func(string) bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond(out.String()) {
		select {
		case code := <-done:
			t.Fatalf("command ended with exit %d before the expected output\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
		case <-deadline.C:
			t.Fatalf("timed out waiting for the expected output\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		case <-tick.C:
		}
	}
}

// upProcess is `warden up` running in-process.
type upProcess struct {
	cancel    context.CancelFunc
	done      chan int
	out, errb syncBuffer
	url       string
	gwURL     string
}

// startUp runs `warden up --port P` with WARDEN_HOME=home and waits until
// /healthz answers. A port taken between choosing and binding it is
// retried with another.
func startUp(t *testing.T, home string) *upProcess {
	t.Helper()
	return startUpWith(t, map[string]string{clientconfig.EnvHome: home})
}

// startUpWith is startUp with the environment vars (WARDEN_HOME among them).
func startUpWith(t *testing.T, vars map[string]string) *upProcess {
	t.Helper()
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		gln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gatewayPort := gln.Addr().(*net.TCPAddr).Port
		// The MCP gateway too: parallel tests cannot share its default port.
		mln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		mcpPort := mln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		require.NoError(t, gln.Close())
		require.NoError(t, mln.Close())

		ctx, cancel := context.WithCancel(t.Context())
		p := &upProcess{cancel: cancel, done: make(chan int, 1), url: "http://127.0.0.1:" + strconv.Itoa(port),
			gwURL: "http://127.0.0.1:" + strconv.Itoa(gatewayPort)}
		go func() {
			p.done <- cli.RunWith(ctx, env(vars, "", &p.out, &p.errb),
				[]string{"warden", "up", "--port", strconv.Itoa(port), "--gateway-port", strconv.Itoa(gatewayPort), "--mcp-port", strconv.Itoa(mcpPort),
					"--memory-port", "0", "--trace-port", "0", "--otlp-http-port", "0", "--otlp-grpc-port", "0", "--router-port", "0", "--rag-port", "0"})
		}()
		err = p.waitHealthy()
		if err == nil {
			t.Cleanup(func() { p.stop() })
			return p
		}
		cancel()
		if attempt < 3 && strings.Contains(p.errb.String(), "address already in use") {
			continue
		}
		t.Fatalf("warden up: %v\nstdout:\n%s\nstderr:\n%s", err, p.out.String(), p.errb.String())
	}
}

func (p *upProcess) waitHealthy() error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get(p.url + "/healthz")
		if err == nil {
			ok := resp.StatusCode == http.StatusOK
			_ = resp.Body.Close()
			if ok {
				return nil
			}
		}
		select {
		case code := <-p.done:
			p.done <- code
			return fmt.Errorf("exited with %d before /healthz answered", code)
		case <-deadline.C:
			return errors.New("/healthz did not answer within 30s")
		case <-tick.C:
		}
	}
}

// stop cancels up's context and returns its exit code.
func (p *upProcess) stop() int {
	p.cancel()
	select {
	case code := <-p.done:
		p.done <- code
		return code
	case <-time.After(30 * time.Second):
		panic("warden up did not stop within 30s of cancellation\nstderr:\n" + p.errb.String())
	}
}

// TestUp runs `warden up` itself from a clean WARDEN_HOME, uses the
// credentials it writes, stops it, and starts it again on the same data.
func TestUp(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home") // up creates it
	cfgPath := filepath.Join(home, "config.yaml")
	onlyHome := map[string]string{clientconfig.EnvHome: home}

	up := startUp(t, home)
	require.Contains(t, up.out.String(), "First start: created tenant \"default\"")
	require.Contains(t, up.out.String(), "control plane + console  "+up.url+"\n")
	require.Regexp(t, `\n  runtime                  GOGC 400, heap floor \d+ MiB, GOMAXPROCS \d+\n`, up.out.String())

	info, err := os.Stat(cfgPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	dirInfo, err := os.Stat(home)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dirInfo.Mode().Perm())
	written, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^  token: wk_\S+$`, string(written))
	require.Contains(t, string(written), "server: "+up.url+"\n")
	require.Contains(t, string(written), "currentContext: local\n")
	cfg, err := clientconfig.Load(home)
	require.NoError(t, err)
	cur, ok := cfg.Current()
	require.True(t, ok)
	key := cur.Token

	// Credentials from the config file only.
	res := run(t.Context(), onlyHome, "", "get", "namespaces")
	require.Equal(t, cli.ExitOK, res.code, res)
	require.Regexp(t, `(?m)^default\s+\d+s$`, res.stdout)
	res = run(t.Context(), onlyHome, "", "get", "environments")
	require.Equal(t, cli.ExitOK, res.code, res)
	require.Contains(t, res.stdout, "dev       dev       staging")

	require.Equal(t, cli.ExitOK, up.stop(), "stdout:\n%s\nstderr:\n%s", up.out.String(), up.errb.String())
	require.Contains(t, up.out.String(), "Warden stopped.\n")
	res = run(t.Context(), map[string]string{clientconfig.EnvHome: home, "WARDEN_SERVER": up.url}, "", "get", "namespaces")
	require.Equal(t, cli.ExitUnreachable, res.code, res)

	// A second start on the same data keeps the key: no new bootstrap, the
	// file is not rewritten, and the old key still works. It exports its
	// traces to the collector the OpenTelemetry variables name.
	collector := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(collector.Close)
	up2 := startUpWith(t, map[string]string{clientconfig.EnvHome: home, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	require.Contains(t, up2.out.String(), "  traces (OTLP/HTTP)       "+collector.URL+"/v1/traces\n")
	require.NotContains(t, up2.out.String(), "First start")
	again, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.Equal(t, string(written), string(again))
	res = run(t.Context(), map[string]string{clientconfig.EnvHome: home, "WARDEN_SERVER": up2.url}, "", "get", "namespaces")
	require.Equal(t, cli.ExitOK, res.code, res)
	res = run(t.Context(), map[string]string{clientconfig.EnvHome: home}, "", "get", "namespaces", "--server", up2.url, "--token", key)
	require.Equal(t, cli.ExitOK, res.code, res)
	require.Contains(t, res.stdout, "default")
	require.Equal(t, cli.ExitOK, up2.stop())
}

// TestUpManifestsFollowPorts: with `up --port P --gateway-port G` (both
// non-default), compiled manifests name the control plane at P and the
// tool gateway at G, never a default port.
func TestUpManifestsFollowPorts(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	up := startUp(t, home)
	vars := map[string]string{clientconfig.EnvHome: home}
	res := run(t.Context(), vars, `apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: m1}
spec: {provider: openai, model: gpt-4o, capabilities: {toolUse: true}}
---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: crm.search}
spec: {source: rest, sideEffect: read_only, rest: {url: "http://127.0.0.1:1/search"}}
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: bot}
spec:
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: m1}
  tools: [{name: crm.search}]
`, "apply", "-f", "-")
	require.Equal(t, cli.ExitOK, res.code, res)
	res = run(t.Context(), vars, "", "get", "compiledagentmanifests", "bot-g1", "-o", "json")
	require.Equal(t, cli.ExitOK, res.code, res)
	var m struct {
		Spec struct {
			Tools []struct {
				GatewayURL string `json:"gatewayUrl"`
			} `json:"tools"`
			Observability struct {
				AbomEndpoint string `json:"abomEndpoint"`
			} `json:"observability"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &m), res.stdout)
	require.Equal(t, up.url+"/v1/agbom/bot", m.Spec.Observability.AbomEndpoint)
	require.Len(t, m.Spec.Tools, 1)
	require.Equal(t, up.gwURL, m.Spec.Tools[0].GatewayURL)
	require.NotContains(t, res.stdout, "127.0.0.1:8080")
	require.NotContains(t, res.stdout, "127.0.0.1:8081")

	// up printed a one-time console sign-in link on the configured port:
	// it signs in once.
	m2 := regexp.MustCompile(`(?m)^  console sign-in +(http://\S+/auth/local\?token=\S+) `).FindStringSubmatch(up.out.String())
	require.NotNil(t, m2, up.out.String())
	require.True(t, strings.HasPrefix(m2[1], up.url+"/auth/local?token="), m2[1])
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
		resp, err := noFollow.Get(m2[1])
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "use %d", i+1)
	}
}
