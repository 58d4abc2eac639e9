package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/clientconfig"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	return port
}

// freePorts returns n distinct free loopback ports: every listener stays
// open until all are chosen, so the system cannot hand out one twice.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	ports := make([]string, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		_, ports[i], err = net.SplitHostPort(ln.Addr().String())
		require.NoError(t, err)
	}
	return ports
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of up's
// stdout and its logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func upEnv(home string, out, errw interface{ Write([]byte) (int, error) }) Env {
	return Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errw, Now: time.Now,
		LookupEnv: func(k string) (string, bool) {
			if k == clientconfig.EnvHome {
				return home, true
			}
			return "", false
		}}
}

// TestUpOnABusyPortChangesNothing checks that a first up on a port that is
// taken (or with a certificate pair that does not load) fails before
// first-start setup: no config, no store, no "starting", and a hint naming
// the flag that moves the port.
func TestUpOnABusyPortChangesNothing(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	_, busyPort, _ := net.SplitHostPort(busy.Addr().String())

	cases := []struct {
		name string
		args []string
		hint string
	}{
		{"control plane port", []string{"--port", busyPort, "--gateway-port", "0", "--memory-port", "0", "--router-port", "0", "--rag-port", "0"}, "choose another port with --port"},
		{"gateway port", []string{"--port", freePort(t), "--gateway-port", busyPort, "--memory-port", "0", "--router-port", "0", "--rag-port", "0"}, "choose another port with --gateway-port"},
		{"memory port", []string{"--port", freePort(t), "--gateway-port", "0", "--memory-port", busyPort, "--router-port", "0", "--rag-port", "0"}, "choose another port with --memory-port"},
		{"router port", []string{"--port", freePort(t), "--gateway-port", "0", "--memory-port", "0", "--router-port", busyPort, "--rag-port", "0"}, "choose another port with --router-port"},
		{"missing TLS files", []string{"--port", freePort(t), "--gateway-port", "0", "--memory-port", "0", "--router-port", "0", "--tls-cert", "/nonexistent/tls.crt", "--tls-key", "/nonexistent/tls.key"},
			"load TLS certificate /nonexistent/tls.crt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			var out, errb bytes.Buffer
			code := RunWith(t.Context(), upEnv(home, &out, &errb), append([]string{"warden", "up"}, tc.args...))
			require.Equal(t, ExitFailure, code, errb.String())
			require.Contains(t, errb.String(), tc.hint)
			if strings.Contains(tc.hint, "port") {
				require.Contains(t, errb.String(), "127.0.0.1:"+busyPort)
			}
			require.Empty(t, out.String(), "nothing is printed to stdout")
			entries, err := os.ReadDir(home)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing is written to WARDEN_HOME")
		})
	}
}

// TestUpSaysEachThingOnceBeforeServing checks up's start-up output: every
// migration is logged once, and all of it comes before "Press Ctrl-C".
func TestUpSaysEachThingOnceBeforeServing(t *testing.T) {
	t.Parallel()
	var (
		home                     string
		port, memPort, tracePort string
		ragPort                  string
		out                      *syncBuffer // stdout and the log, in the order they were written
		cancel                   context.CancelFunc
		done                     chan int
	)
	// The ports are free when chosen, but a test of another package may
	// take one before up binds it; up then exits with a bind error and is
	// started again on other ports.
	for attempt := 1; ; attempt++ {
		home = t.TempDir()
		p := freePorts(t, 9)
		port, memPort, tracePort, ragPort = p[0], p[1], p[2], p[3]
		args := []string{"warden", "up", "--port", port, "--gateway-port", p[4], "--mcp-port", p[5], "--memory-port", memPort,
			"--trace-port", tracePort, "--otlp-http-port", p[6], "--otlp-grpc-port", p[7], "--router-port", p[8], "--rag-port", ragPort}
		out = &syncBuffer{}
		var ctx context.Context
		ctx, cancel = context.WithCancel(t.Context())
		done = make(chan int, 1)
		go func() { done <- RunWith(ctx, upEnv(home, out, out), args) }()
		code, exited := 0, false
		require.Eventually(t, func() bool {
			select {
			case code = <-done:
				exited = true
				return true
			default:
				return strings.Contains(out.String(), "Press Ctrl-C to stop.")
			}
		}, 60*time.Second, 10*time.Millisecond, "up neither said it was serving nor exited")
		if !exited {
			break
		}
		cancel()
		if attempt < 3 && strings.Contains(out.String(), "cannot listen on") {
			continue
		}
		t.Fatalf("up exited with %d before serving:\n%s", code, out.String())
	}
	for _, p := range []string{port, memPort, tracePort} {
		res, err := http.Get("http://127.0.0.1:" + p + "/healthz")
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	require.Contains(t, out.String(), "memory                   http://127.0.0.1:"+memPort)
	cancel()
	require.Equal(t, 0, <-done, out.String())

	text := out.String()
	ready := strings.Index(text, "Press Ctrl-C to stop.")
	require.Equal(t, 1, strings.Count(text, "Press Ctrl-C to stop."))
	for v := 1; v <= 6; v++ {
		line := "applied River migration\" driver=sqlite version=" + strconv.Itoa(v) + " "
		require.Equal(t, 1, strings.Count(text, line), "River migration %d is logged once:\n%s", v, text)
		require.Less(t, strings.Index(text, line), ready, "migration %d is logged before Press Ctrl-C", v)
	}
	require.NotContains(t, text, "rivermigrate")
	require.Equal(t, 1, strings.Count(text, "  RAG                      http://127.0.0.1:"+ragPort+"\n"), "the RAG service is announced once:\n%s", text)
	require.Less(t, strings.Index(text, "  RAG  "), ready)
	require.Less(t, strings.Index(text, "trace query + /metrics   http://127.0.0.1:"+tracePort), ready, "the trace service is in the summary")
	// Where the sandbox cannot run, it is said once, in the summary.
	require.NotContains(t, text, "OS tools are unavailable")
	require.LessOrEqual(t, strings.Count(text, "OS tool sandbox"), 1)
	if i := strings.Index(text, "OS tool sandbox"); i >= 0 {
		require.Less(t, i, ready)
	}
	_, err := os.Stat(filepath.Join(home, "config.yaml"))
	require.NoError(t, err)
}
