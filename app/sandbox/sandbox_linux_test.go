package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestRun_filesystem proves that the command sees only what its Spec
// allows: files outside AllowRead do not exist for it (not even through a
// symlink inside an allowed directory), what is mounted but in no rule is
// denied by Landlock, allowed paths are read-only unless in AllowWrite,
// and the root is read-only.
func TestRun_filesystem(t *testing.T) {
	t.Parallel()
	b := setup(t)

	base := t.TempDir()
	for path, content := range map[string]string{
		"pub/data.txt":    "public",
		"priv/secret.txt": "secret",
		"pub2/only.txt":   "only",
		"pub2/other.txt":  "other",
		"out/.keep":       "",
	} {
		p := filepath.Join(base, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	require.NoError(t, os.Symlink("../priv/secret.txt", filepath.Join(base, "pub", "link")))
	spec := func(cmd []string) Spec {
		return Spec{
			Command:    cmd,
			AllowRead:  []string{filepath.Join(base, "pub"), filepath.Join(base, "pub2", "only.txt")},
			AllowWrite: []string{filepath.Join(base, "out")},
		}
	}

	tests := []struct {
		name       string
		cmd        []string
		wantOK     bool
		wantStdout string
		wantStderr string // substring, when !wantOK
		check      func(t *testing.T)
	}{
		{name: "file in an allowed directory is readable", cmd: b.helper("cat", filepath.Join(base, "pub", "data.txt")), wantOK: true, wantStdout: "public"},
		{name: "allowed file is readable", cmd: b.helper("cat", filepath.Join(base, "pub2", "only.txt")), wantOK: true, wantStdout: "only"},
		{name: "file outside the allowance is unreadable", cmd: b.helper("cat", filepath.Join(base, "priv", "secret.txt")), wantStderr: "no such file"},
		{name: "sibling of an allowed file is unreadable", cmd: b.helper("cat", filepath.Join(base, "pub2", "other.txt")), wantStderr: "no such file"},
		{name: "symlink out of an allowed directory leads nowhere", cmd: b.helper("cat", filepath.Join(base, "pub", "link")), wantStderr: "no such file"},
		// The root exists (bwrap's tmpfs) but is in no Landlock rule. (The
		// stub binary is not a good witness here: it is the test binary,
		// which the helper needs allowed, and Landlock rules follow inodes.)
		{name: "landlock denies what no rule allows", cmd: b.helper("ls", "/"), wantStderr: "permission denied"},
		{name: "landlock denies listing /dev", cmd: b.helper("ls", "/dev"), wantStderr: "permission denied"},
		{name: "host /etc/shadow is not there", cmd: b.helper("cat", "/etc/shadow"), wantStderr: "no such file"},
		{name: "allowed read directory is read-only", cmd: b.helper("write", filepath.Join(base, "pub", "new.txt"), "x"), wantStderr: "read-only file system"},
		{name: "root is read-only", cmd: b.helper("write", "/new.txt", "x"), wantStderr: "read-only file system"},
		{name: "system directories are read-only", cmd: b.helper("write", "/usr/new.txt", "x"), wantStderr: "read-only file system"},
		{name: "scratch is the writable working directory", cmd: b.helper("write", "new.txt", "x"), wantOK: true, wantStdout: "wrote"},
		{name: "/tmp is writable", cmd: b.helper("write", "/tmp/new.txt", "x"), wantOK: true, wantStdout: "wrote"},
		{
			name: "allowed write directory is writable from the host's view", cmd: b.helper("write", filepath.Join(base, "out", "result.txt"), "hello"),
			wantOK: true, wantStdout: "wrote",
			check: func(t *testing.T) {
				got, err := os.ReadFile(filepath.Join(base, "out", "result.txt"))
				require.NoError(t, err)
				require.Equal(t, "hello", string(got))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.run(t, spec(tt.cmd))
			if tt.wantOK {
				require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
				require.Equal(t, tt.wantStdout, string(res.Stdout))
			} else {
				require.NotEqual(t, 0, res.ExitCode, "stdout: %s", res.Stdout)
				require.Contains(t, strings.ToLower(string(res.Stderr)), tt.wantStderr)
				require.Empty(t, res.Stdout)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

// TestRun_network proves that without AllowHosts the sandbox has only its
// own loopback, and that with AllowHosts the command reaches exactly the
// allowed host through the egress proxy, while a direct connection to the
// very same host still fails.
func TestRun_network(t *testing.T) {
	t.Parallel()
	b := setup(t)

	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the host")
	}))
	t.Cleanup(allowed.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "must not be reached")
	}))
	t.Cleanup(other.Close)
	allowedTLS := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello over TLS")
	}))
	t.Cleanup(allowedTLS.Close)
	allowedAddr := mustHost(t, allowed.URL)
	allowedTLSAddr := mustHost(t, allowedTLS.URL)
	curl := func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("curl not installed; the Go client cases cover the proxy")
		}
	}

	tests := []struct {
		name       string
		hosts      []string
		cmd        []string
		wantOK     bool
		wantStdout string
		wantStderr string // substring, when !wantOK
		needs      func(t *testing.T)
	}{
		{name: "no hosts: only the loopback interface", cmd: b.helper("ifaces"), wantOK: true, wantStdout: "lo\n"},
		{name: "no hosts: the host's server is unreachable", cmd: b.helper("dial", allowedAddr), wantStderr: "connection refused"},
		{name: "no hosts: HTTP fails", cmd: b.helper("get", allowed.URL), wantStderr: "connection refused"},
		{name: "hosts: still only the loopback interface", hosts: []string{allowedAddr}, cmd: b.helper("ifaces"), wantOK: true, wantStdout: "lo\n"},
		{name: "hosts: allowed host answers through the proxy", hosts: []string{allowedAddr}, cmd: b.helper("get", allowed.URL), wantOK: true, wantStdout: "200 hello from the host"},
		{name: "hosts: other host is refused by the proxy", hosts: []string{allowedAddr}, cmd: b.helper("get", other.URL), wantOK: true, wantStdout: "403 sandbox egress: destination not allowed\n"},
		{name: "hosts: direct connection to the allowed host fails", hosts: []string{allowedAddr}, cmd: b.helper("dial", allowedAddr), wantStderr: "connection refused"},
		{name: "hosts: TLS through a CONNECT tunnel", hosts: []string{allowedTLSAddr}, cmd: b.helper("get-insecure", allowedTLS.URL), wantOK: true, wantStdout: "200 hello over TLS"},
		{name: "hosts: CONNECT to another host is refused", hosts: []string{allowedAddr}, cmd: b.helper("get-insecure", allowedTLS.URL), wantStderr: "Forbidden"},
		{name: "hosts: curl honours the proxy variables", hosts: []string{allowedAddr}, cmd: []string{"curl", "-sS", allowed.URL}, wantOK: true, wantStdout: "hello from the host", needs: curl},
		{name: "hosts: curl cannot reach another host", hosts: []string{allowedAddr}, cmd: []string{"curl", "-sSf", other.URL}, wantStderr: "403", needs: curl},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.needs != nil {
				tt.needs(t)
			}
			res := b.run(t, Spec{Command: tt.cmd, AllowHosts: tt.hosts})
			if !tt.wantOK {
				require.NotEqual(t, 0, res.ExitCode, "stdout: %s", res.Stdout)
				require.Contains(t, string(res.Stderr), tt.wantStderr)
				return
			}
			require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
			require.Equal(t, tt.wantStdout, string(res.Stdout))
		})
	}
}

// TestRun_timeoutKillsTheTree proves that a command is killed at its time
// limit together with the processes it started, and that Run returns
// promptly: the context deadline is far below the commands' 30 s, and no
// process of the sandbox is left once Run has returned.
func TestRun_timeoutKillsTheTree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A unique argument to find the sleeps among the host's processes.
	marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1_000_000_000)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := b.runner.Run(ctx, Spec{
		Command: []string{"sh", "-c", fmt.Sprintf("sleep %s & sleep %s; wait", marker, marker)},
		Timeout: 500 * time.Millisecond,
	})
	require.NoError(t, err, "Run must return before the 10s context deadline")
	require.True(t, res.TimedOut)
	require.Equal(t, 137, res.ExitCode)
	require.Less(t, res.Duration, 10*time.Second)
	require.Empty(t, processesWith(t, marker), "sandboxed processes survived Run")
}

// TestRun_backgroundProcessesDie proves that a process the command leaves
// behind does not outlive it: the pid namespace ends with the command, and
// Run does not wait for the straggler's 30 seconds.
func TestRun_backgroundProcessesDie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1_000_000_000+1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.runner.Run(ctx, Spec{
		Command: []string{"sh", "-c", fmt.Sprintf("sleep %s >/dev/null 2>&1 & echo started", marker)},
		Timeout: 20 * time.Second,
	})
	require.NoError(t, err)
	require.False(t, res.TimedOut)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "started\n", string(res.Stdout))
	require.Empty(t, processesWith(t, marker), "a background process survived Run")
}

// TestRun_contextCancelKillsTheSandbox proves that canceling the caller's
// context ends the run early with the context's error.
func TestRun_contextCancelKillsTheSandbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := b.runner.Run(ctx, Spec{Command: []string{"sleep", "30"}, Timeout: 20 * time.Second})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// processesWith lists host pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // not a process, or gone
		}
		if strings.Contains(string(cmdline), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestRun_limits proves the rlimits: CPU time ends a busy loop, and an
// allocation over the address-space limit fails while a smaller one works.
func TestRun_limits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := exec.LookPath("perl")
	require.NoError(t, err, "perl (Debian's essential perl-base) allocates memory in the memory test")
	const alloc = `my $x = "a" x (128*1024*1024); print "allocated"`

	tests := []struct {
		name       string
		spec       Spec
		wantExit   []int // nil: any failure
		wantStdout string
	}{
		{
			name: "cpu limit kills a busy loop",
			// A long Timeout: on a loaded machine one CPU second takes a while.
			spec:     Spec{Command: []string{"sh", "-c", "while :; do :; done"}, CPUSeconds: 1, Timeout: time.Minute},
			wantExit: []int{128 + int(unix.SIGXCPU), 128 + int(unix.SIGKILL)},
		},
		{
			name: "allocation over the memory limit fails",
			spec: Spec{Command: []string{"perl", "-e", alloc}, MemoryMB: 64},
		},
		{
			name:       "allocation under the memory limit works",
			spec:       Spec{Command: []string{"perl", "-e", alloc}, MemoryMB: 1024},
			wantExit:   []int{0},
			wantStdout: "allocated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.run(t, tt.spec)
			require.False(t, res.TimedOut)
			if tt.wantExit == nil {
				require.NotEqual(t, 0, res.ExitCode, "stderr %q", res.Stderr)
			} else {
				require.True(t, slices.Contains(tt.wantExit, res.ExitCode), "exit %d, stderr %q", res.ExitCode, res.Stderr)
			}
			require.Equal(t, tt.wantStdout, string(res.Stdout))
		})
	}
}

// TestRun_seccomp proves the filter: without it, unshare and clone3 fail
// with EINVAL instead (checked by disabling it). Mount and ptrace would fail
// with EPERM for want of capabilities too; their rows show the filter
// answers first and nothing else changed.
func TestRun_seccomp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct{ mode, wantStderr string }{
		{mode: "unshare", wantStderr: "unshare: operation not permitted"},
		{mode: "mount", wantStderr: "mount: operation not permitted"},
		{mode: "ptrace", wantStderr: "ptrace: operation not permitted"},
		{mode: "clone3", wantStderr: "clone3: function not implemented"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			res := b.run(t, Spec{Command: b.helper(tt.mode)})
			require.Equal(t, 1, res.ExitCode, "stdout: %s", res.Stdout)
			require.Contains(t, string(res.Stderr), tt.wantStderr)
		})
	}
}

// TestRun_io covers stdin, the minimal environment, exit codes and the
// output cap.
func TestRun_io(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("stdin reaches the command", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, Spec{Command: b.helper("echo-stdin"), Stdin: []byte(`{"path":"a.txt"}`)})
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, `{"path":"a.txt"}`, string(res.Stdout))
	})
	t.Run("environment is minimal plus Env", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, Spec{Command: b.helper("env"), Env: map[string]string{"FOO": "bar", "LANG": "C"}})
		require.Equal(t, 0, res.ExitCode)
		env := strings.Split(string(res.Stdout), "\n")
		slices.Sort(env)
		require.Equal(t, []string{"FOO=bar", "HOME=/scratch", "LANG=C", "PATH=" + defaultPATH, "TMPDIR=/tmp"}, env)
	})
	t.Run("egress sets the proxy variables", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, Spec{Command: b.helper("env"), AllowHosts: []string{"example.com"}})
		require.Equal(t, 0, res.ExitCode)
		require.Regexp(t, `(?m)^HTTPS_PROXY=http://127\.0\.0\.1:\d+$`, string(res.Stdout))
		require.Regexp(t, `(?m)^http_proxy=http://127\.0\.0\.1:\d+$`, string(res.Stdout))
	})
	t.Run("exit code is passed on", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, Spec{Command: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}})
		require.Equal(t, 7, res.ExitCode)
		require.Equal(t, "out\n", string(res.Stdout))
		require.Equal(t, "err\n", string(res.Stderr))
		require.False(t, res.Truncated)
	})
	t.Run("output is capped", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, Spec{Command: b.helper("spam", "100000"), MaxOutputBytes: 1000})
		require.Equal(t, 0, res.ExitCode)
		require.Len(t, res.Stdout, 1000)
		require.Len(t, res.Stderr, 1000)
		require.True(t, res.Truncated)
	})
}

// TestRun_removesRunDirectories checks that nothing of a run is left in the
// Runner's TempDir.
func TestRun_removesRunDirectories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, Spec{Command: []string{"sh", "-c", "echo data > /scratch/f; mkdir -p /tmp/d; echo data > /tmp/d/f"}})
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	entries, err := os.ReadDir(b.tempDir)
	require.NoError(t, err)
	require.Empty(t, entries)
}
