package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// start starts spec with the test binary allowed, and stops the process
// when the test ends.
func (b *bundle) start(t *testing.T, spec Spec) *Process {
	t.Helper()
	spec.AllowRead = append([]string{b.exe}, spec.AllowRead...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := b.runner.Start(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(time.Second) })
	return p
}

// TestStart_talksOverStdio proves that a process answers line by line
// over its pipes while it runs, and exits by itself when Stop closes its
// stdin.
func TestStart_talksOverStdio(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.start(t, Spec{Command: b.helper("echo-stdin")})
	out := bufio.NewReader(p.Stdout())
	for _, line := range []string{"first\n", `{"jsonrpc":"2.0"}` + "\n"} {
		_, err := io.WriteString(p.Stdin(), line)
		require.NoError(t, err)
		got, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, line, got)
	}
	exit := p.Stop(time.Minute)
	require.Equal(t, 0, exit.ExitCode, "the command exits on EOF, before the grace ends")
	require.False(t, exit.Killed)
	_, err := out.ReadString('\n')
	require.Error(t, err, "stdout is closed once the process is gone")
	entries, err := os.ReadDir(b.tempDir)
	require.NoError(t, err)
	require.Empty(t, entries, "Stop removes the run's directories")
}

// TestStart_stopKillsTheTree proves that Stop kills a process that ignores
// its closed stdin, with the processes it started, once the grace passed.
func TestStart_stopKillsTheTree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1_000_000_000+2)
	p := b.start(t, Spec{Command: []string{"sh", "-c", fmt.Sprintf("sleep %s & sleep %s; wait", marker, marker)}})
	require.NotEmpty(t, processesWith(t, marker), "the process runs until stopped")
	start := time.Now()
	exit := p.Stop(100 * time.Millisecond)
	require.Equal(t, 137, exit.ExitCode)
	require.True(t, exit.Killed)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Empty(t, processesWith(t, marker), "sandboxed processes survived Stop")
	select {
	case <-p.Done():
	default:
		t.Fatal("Done is not closed after Stop")
	}
}

// TestStart_killEndsTheProcess proves that Kill ends a running process and
// Wait reports it, as a crash would.
func TestStart_killEndsTheProcess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.start(t, Spec{Command: []string{"sleep", "30"}})
	p.Kill()
	exit := p.Wait()
	require.Equal(t, 137, exit.ExitCode)
	require.True(t, exit.Killed)
}

// TestStart_stderrIsRedactedAndBounded proves that the stderr a process
// keeps is its newest bytes, bounded, with the Redact values masked even
// when the command prints its environment.
func TestStart_stderrIsRedactedAndBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const token = "tok-5f1d2c9a-secret"
	p := b.start(t, Spec{
		Command:        []string{"sh", "-c", `printf 'x%.0s' $(seq 1 300) >&2; echo "token=$TOKEN" >&2; echo ready; exec cat`},
		Env:            map[string]string{"TOKEN": token},
		Redact:         []string{token},
		MaxOutputBytes: 100,
	})
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	p.Stop(time.Minute)
	got := string(p.Stderr())
	require.Contains(t, got, "token=[REDACTED]\n")
	require.NotContains(t, got, token)
	require.NotContains(t, got, "tok-5f1d")
	require.LessOrEqual(t, len(got), 100)
	require.True(t, strings.HasPrefix(got, "xxx"), "the oldest bytes are dropped: %q", got)
}

func TestStart_refusesWhatAProcessCannotHave(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		spec  Spec
		err   error
		field string
	}{
		{name: "stdin", spec: Spec{Command: []string{"cat"}, Stdin: []byte("x")}, err: ErrInvalidSpec, field: "stdin"},
		{name: "timeout", spec: Spec{Command: []string{"cat"}, Timeout: time.Second}, err: ErrInvalidSpec, field: "timeout"},
		{name: "no command", spec: Spec{}, err: ErrInvalidSpec, field: "command"},
		{name: "command not found", spec: Spec{Command: []string{"no-such-command-warden"}}, err: ErrSetup, field: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := b.runner.Start(context.Background(), tt.spec)
			require.ErrorIs(t, err, tt.err)
			require.ErrorContains(t, err, tt.field)
			require.Nil(t, p)
		})
	}
	entries, err := os.ReadDir(b.tempDir)
	require.NoError(t, err)
	require.Empty(t, entries, "a failed start leaves nothing behind")
}
