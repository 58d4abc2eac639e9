package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperArg makes the test binary act as a small, predictable command that
// tests run inside the sandbox (see helperMain).
const helperArg = "__sandbox-test-helper"

// TestMain dispatches the test binary the way main.go dispatches warden: as
// the sandbox's init stub, or as the helper command the tests run in it.
// These exit through syscall.Exit rather than os.Exit only because, under
// -race, os.Exit(0) sleeps a second (GORACE atexit_sleep_ms, which cannot be
// set in the sandbox's empty environment); they have nothing to flush.
func TestMain(m *testing.M) {
	if IsInit(os.Args) {
		syscall.Exit(InitMain(os.Args))
	}
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		syscall.Exit(helperMain(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// helperMain runs one helper mode and returns its exit code. It prints what
// it did on stdout and why it failed on stderr.
func helperMain(mode string, args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "cat": // cat PATH
		b, err := os.ReadFile(args[0])
		if err != nil {
			return fail(err)
		}
		os.Stdout.Write(b)
	case "ls": // ls DIR
		entries, err := os.ReadDir(args[0])
		if err != nil {
			return fail(err)
		}
		for _, e := range entries {
			fmt.Println(e.Name())
		}
	case "write": // write PATH TEXT
		if err := os.WriteFile(args[0], []byte(args[1]), 0o600); err != nil {
			return fail(err)
		}
		fmt.Print("wrote")
	case "echo-stdin":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			return fail(err)
		}
	case "env":
		fmt.Print(strings.Join(os.Environ(), "\n"))
	case "spam": // spam N: N bytes on stdout and on stderr
		n, _ := strconv.Atoi(args[0])
		b := []byte(strings.Repeat("x", n))
		os.Stdout.Write(b)
		os.Stderr.Write(b)
	case "ifaces":
		ifs, err := net.Interfaces()
		if err != nil {
			return fail(err)
		}
		for _, i := range ifs {
			fmt.Println(i.Name)
		}
	case "dial": // dial HOST:PORT, directly
		c, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			return fail(err)
		}
		c.Close()
		fmt.Print("connected")
	case "get": // get URL, through HTTP_PROXY when it is set
		return helperGet(args[0], false)
	case "get-insecure": // get URL without verifying TLS (httptest's certificate)
		return helperGet(args[0], true)
	case "unshare":
		if err := unix.Unshare(unix.CLONE_NEWUSER); err != nil {
			return fail(fmt.Errorf("unshare: %w", err))
		}
		fmt.Print("unshared")
	case "mount":
		if err := unix.Mount("none", "/scratch", "tmpfs", 0, ""); err != nil {
			return fail(fmt.Errorf("mount: %w", err))
		}
		fmt.Print("mounted")
	case "clone3": // a raw clone3 with no arguments: EINVAL without the filter
		if _, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0); errno != 0 {
			return fail(fmt.Errorf("clone3: %w", errno))
		}
		fmt.Print("cloned")
	case "ptrace":
		if err := unix.PtraceAttach(1); err != nil {
			return fail(fmt.Errorf("ptrace: %w", err))
		}
		fmt.Print("attached")
	default:
		return fail(fmt.Errorf("unknown helper mode %q", mode))
	}
	return 0
}

// helperGet fetches url and prints "STATUS BODY". Go's ProxyFromEnvironment
// never proxies loopback addresses, so the proxy is set explicitly.
func helperGet(target string, insecure bool) int {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure}}
	if p := os.Getenv("HTTP_PROXY"); p != "" {
		u, err := url.Parse(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		tr.Proxy = http.ProxyURL(u)
	}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := client.Get(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, body)
	return 0
}

// bundle is what a sandbox test needs.
type bundle struct {
	runner  *Runner
	tempDir string // the Runner's Config.TempDir
	exe     string // the test binary, which tests allow and run as the helper
}

// setup makes a Runner whose per-run directories go to a fresh temp dir.
// Tests skip without bwrap only in -short mode: CI installs bubblewrap.
func setup(t *testing.T) *bundle {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && testing.Short() {
		t.Skip("bwrap not installed (apt-get install -y bubblewrap); skipped in -short mode")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	r, err := New(context.Background(), Config{TempDir: dir})
	require.NoError(t, err)
	return &bundle{runner: r, tempDir: dir, exe: exe}
}

// helper returns the argv that runs the test binary in a helper mode.
func (b *bundle) helper(mode string, args ...string) []string {
	return append([]string{b.exe, helperArg, mode}, args...)
}

// run runs spec, with the test binary allowed, and fails the test on error.
func (b *bundle) run(t *testing.T, spec Spec) *Result {
	t.Helper()
	spec.AllowRead = append([]string{b.exe}, spec.AllowRead...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := b.runner.Run(ctx, spec)
	require.NoError(t, err)
	return res
}

func TestMain_dispatch(t *testing.T) {
	t.Parallel()
	require.True(t, IsInit([]string{"warden", initArg}))
	require.True(t, IsInit([]string{"warden", execArg}))
	require.False(t, IsInit([]string{"warden", "up"}))
	require.False(t, IsInit([]string{"warden"}))
}

func TestNew_missingBwrapNamesThePackage(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{BwrapPath: "/nonexistent/bwrap"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "bubblewrap")
	require.ErrorContains(t, err, "apt-get install -y bubblewrap")
}

func TestNew_initPathWithoutHookIsRefused(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bwrap"); err != nil && testing.Short() {
		t.Skip("bwrap not installed")
	}
	// /usr/bin/true does not dispatch to InitMain: it exits 0 without
	// running the stub, which must not pass for a working sandbox.
	truePath, err := exec.LookPath("true")
	require.NoError(t, err)
	_, err = New(context.Background(), Config{InitPath: truePath, TempDir: t.TempDir()})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "InitMain")
}

func TestRun_invalidSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.runner.Run(context.Background(), Spec{
		AllowRead:  []string{"relative/path", "/proc/1", "/"},
		AllowWrite: []string{"/nonexistent-warden-path"},
		AllowHosts: []string{"https://example.com/"},
		Env:        map[string]string{"A=B": "x"},
		CPUSeconds: -1,
	})
	require.ErrorIs(t, err, ErrInvalidSpec)
	for _, field := range []string{"command", "allowRead[0]", "allowRead[1]", "allowRead[2]", "allowWrite[0]", "allowHosts[0]", `env["A=B"]`, "cpuSeconds"} {
		require.ErrorContains(t, err, field)
	}
}

func TestRun_commandNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.runner.Run(context.Background(), Spec{Command: []string{"no-such-command-warden"}})
	require.ErrorIs(t, err, ErrSetup)
	require.ErrorContains(t, err, "not found")
}

func TestRun_canceledContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.runner.Run(ctx, Spec{Command: []string{"true"}})
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}
