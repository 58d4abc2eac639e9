package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// Bounds of the Runner's own housekeeping.
const (
	// killGrace bounds how long Run waits, once the sandbox was killed or
	// bwrap exited, for the remaining processes and pipes to go away.
	killGrace = 2 * time.Second
	// probeTimeout bounds Check's trial run.
	probeTimeout = 30 * time.Second
	// maxStatusBytes bounds what the stub may report.
	maxStatusBytes = 64 << 10
)

// Runner runs commands in sandboxes. It is safe for concurrent use: every
// Run gets its own namespaces, directories and egress proxy.
type Runner struct {
	cfg           Config
	bwrap         string
	initPath      string
	systemMounts  []string
	disableUserns bool
}

// New returns a Runner after checking that sandboxing works on this host: it
// finds bwrap, checks that the kernel has Landlock and seccomp, and runs
// Check. Its errors wrap ErrUnavailable and say what to fix; a missing bwrap
// names the Debian package bubblewrap.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bwrap, err := exec.LookPath(cfg.BwrapPath)
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap not found (%w); install the Debian package bubblewrap (apt-get install -y bubblewrap)", ErrUnavailable, err)
	}
	initPath := cfg.InitPath
	if initPath == "" {
		if initPath, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("%w: find own executable: %w", ErrUnavailable, err)
		}
	}
	if initPath, err = filepath.EvalSymlinks(initPath); err != nil {
		return nil, fmt.Errorf("%w: init stub: %w", ErrUnavailable, err)
	}
	if landlockABI() < 1 {
		return nil, fmt.Errorf("%w: the kernel has no Landlock (needs Linux 5.13+ with landlock in the lsm= list)", ErrUnavailable)
	}
	if !seccomp.Supported() {
		return nil, fmt.Errorf("%w: the kernel has no seccomp filters", ErrUnavailable)
	}
	help, _ := exec.CommandContext(ctx, bwrap, "--help").CombinedOutput()
	r := &Runner{
		cfg:           cfg,
		bwrap:         bwrap,
		initPath:      initPath,
		systemMounts:  hostSystemMounts(),
		disableUserns: bytes.Contains(help, []byte("--disable-userns")),
	}
	if err := r.Check(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Check runs an empty sandbox end to end: bwrap with every namespace, the
// init stub, Landlock (verified to deny), seccomp and the rlimits. It is what
// New runs; call it again for a health check. Its errors wrap
// ErrUnavailable.
func (r *Runner) Check(ctx context.Context) error {
	p, err := makePlan(Spec{Command: []string{"probe"}, Timeout: probeTimeout, CPUSeconds: 1},
		r.cfg.DefaultTimeout, r.cfg.DefaultMaxOutputBytes, false)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	res, err := r.run(ctx, p, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("%w: probe sandbox exited with %d (timed out: %t): %s",
			ErrUnavailable, res.ExitCode, res.TimedOut, firstLine(res.Stderr))
	}
	return nil
}

// Run executes spec.Command in a new sandbox and returns how it ended. A
// command that fails or is killed at its limits is a Result; errors are for
// an invalid spec (ErrInvalidSpec), a sandbox that could not be set up or a
// command that could not be executed (ErrSetup), and a canceled ctx. Run
// returns only once every process of the sandbox has exited, and it removes
// the run's scratch and /tmp directories before returning.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Result, error) {
	p, err := makePlan(spec, r.cfg.DefaultTimeout, r.cfg.DefaultMaxOutputBytes, false)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, p, false)
}

func (r *Runner) run(ctx context.Context, p *plan, probe bool) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: run canceled: %w", err)
	}
	// See startSandbox: this thread started bwrap and must outlive it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	stdout := &cappedBuffer{max: p.spec.MaxOutputBytes}
	stderr := &cappedBuffer{max: p.spec.MaxOutputBytes}
	std := streams{stdout: stdout, stderr: stderr}
	if len(p.spec.Stdin) > 0 {
		std.stdin = bytes.NewReader(p.spec.Stdin)
	}
	l, err := r.startSandbox(ctx, p, probe, std)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, p.spec.Timeout)
	defer cancel()
	var killed atomic.Bool
	killDone := make(chan struct{})
	stopKill := context.AfterFunc(runCtx, func() {
		defer close(killDone)
		if l.kill() {
			killed.Store(true)
		}
	})
	o := l.wait()
	if !stopKill() {
		<-killDone // the kill started: let it finish before reading killed
	}

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: run canceled: %w", err)
	}
	timedOut := killed.Load()
	if timedOut {
		o.code = 128 + int(unix.SIGKILL)
	}
	errOut := redact(stderr.Bytes(), p.spec.Redact, false, stderr.truncated)
	if err := l.setupError(r, o, timedOut, errOut); err != nil {
		return nil, err
	}
	res := &Result{
		ExitCode:  o.code,
		Stdout:    stdout.Bytes(),
		Stderr:    errOut,
		TimedOut:  timedOut,
		Truncated: stdout.truncated || stderr.truncated,
		Duration:  o.duration,
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "sandbox run",
		slog.String("command", filepath.Base(p.spec.Command[0])),
		slog.Bool("probe", probe),
		slog.Int("exitCode", res.ExitCode),
		slog.Bool("timedOut", res.TimedOut),
		slog.Duration("duration", res.Duration),
		slog.Int("stdoutBytes", len(res.Stdout)),
		slog.Int("stderrBytes", len(res.Stderr)),
		slog.Bool("truncated", res.Truncated),
		slog.Bool("egress", l.stub.EgressSocket != ""),
	)
	return res, nil
}

// stubStatus is what the init stub reported on fdStatus.
type stubStatus struct {
	started bool   // the stub ran (so bwrap set the sandbox up)
	err     string // the stub failed before executing the command
}

func parseStatus(data []byte) stubStatus {
	var s stubStatus
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == statusStarted:
			s.started = true
		case strings.HasPrefix(line, statusError) && s.err == "":
			s.err = strings.TrimPrefix(line, statusError)
		}
	}
	return s
}

// sandboxInit tracks the sandbox's pid 1 (bwrap's reaper, the child bwrap
// reports on --info-fd) through a pidfd, so that Run can kill the whole pid
// namespace at once and wait until it is empty: the kernel kills every
// process in a pid namespace when its pid 1 dies, and that death is only
// reported once they are all gone.
type sandboxInit struct {
	mu      sync.Mutex
	fd      int  // pidfd, or -1
	started bool // bwrap reported a child, so the namespaces were made
}

// open reads bwrap's info JSON and opens a pidfd for the reported child.
func (s *sandboxInit) open(info io.Reader) {
	var msg struct {
		ChildPID     int    `json:"child-pid"`
		PidNamespace uint64 `json:"pid-namespace"`
	}
	if err := json.NewDecoder(info).Decode(&msg); err != nil || msg.ChildPID <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(msg.ChildPID, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	if err != nil {
		return // already gone: nothing to kill or wait for
	}
	// Guard against the pid having been reused in between: the process
	// must be pid 1 of the namespace bwrap made. (Without access to /proc
	// the pid is trusted; bwrap reported it a moment ago.)
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", msg.ChildPID), &st); err == nil && msg.PidNamespace != 0 && st.Ino != msg.PidNamespace {
		unix.Close(fd)
		return
	}
	s.fd = fd
}

// kill sends SIGKILL to the sandbox's pid 1 and reports whether it could.
func (s *sandboxInit) kill() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fd >= 0 && unix.PidfdSendSignal(s.fd, unix.SIGKILL, nil, 0) == nil
}

// wait blocks until the sandbox's pid 1 has exited, at most for d.
func (s *sandboxInit) wait(d time.Duration) {
	s.mu.Lock()
	fd := s.fd
	s.mu.Unlock()
	if fd < 0 {
		return
	}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == nil && n > 0 || err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

func (s *sandboxInit) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// firstLine returns the first line of b, shortened, for error messages about
// bwrap or the stub (never about the command's own output).
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}
