package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
		r.cfg.DefaultTimeout, r.cfg.DefaultMaxOutputBytes)
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
	p, err := makePlan(spec, r.cfg.DefaultTimeout, r.cfg.DefaultMaxOutputBytes)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, p, false)
}

func (r *Runner) run(ctx context.Context, p *plan, probe bool) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: run canceled: %w", err)
	}
	base, err := os.MkdirTemp(r.cfg.TempDir, "warden-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("%w: make run directory: %w", ErrSetup, err)
	}
	defer func() {
		if err := os.RemoveAll(base); err != nil {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "sandbox: remove run directory", slog.String("error", err.Error()))
		}
	}()
	dirs := runDirs{scratch: filepath.Join(base, "scratch"), tmp: filepath.Join(base, "tmp")}
	for _, d := range []string{dirs.scratch, dirs.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("%w: make run directory: %w", ErrSetup, err)
		}
	}
	stub := stubConfig{
		Argv:        p.spec.Command,
		Env:         p.env,
		Paths:       landlockRules(p.binds),
		CPUSeconds:  p.spec.CPUSeconds,
		MemoryBytes: p.spec.MemoryMB << 20,
		Probe:       probe,
	}
	if len(p.egress) > 0 {
		// The socket lives in os.TempDir rather than Config.TempDir because
		// a unix socket path must stay under 108 bytes.
		dir, err := os.MkdirTemp("", "warden-egress-")
		if err != nil {
			return nil, fmt.Errorf("%w: egress proxy: %w", ErrSetup, err)
		}
		defer os.RemoveAll(dir)
		ln, err := net.Listen("unix", filepath.Join(dir, filepath.Base(egressSock)))
		if err != nil {
			return nil, fmt.Errorf("%w: egress proxy: %w", ErrSetup, err)
		}
		stop := serveEgress(ctx, ln, p.egress, r.cfg.Logger)
		defer stop()
		dirs.egress = dir
		stub.EgressSocket = egressSock
	}
	return r.execute(ctx, p, stub, bwrapArgs(r.systemMounts, r.disableUserns, r.initPath, dirs, p.binds))
}

// execute starts bwrap, feeds the stub its config, enforces the time limit
// and collects the outcome.
func (r *Runner) execute(ctx context.Context, p *plan, stub stubConfig, args []string) (*Result, error) {
	// Pdeathsig and bwrap's --die-with-parent fire when the OS thread that
	// started bwrap exits, not the process; keep that thread alive and
	// ours until the run is over.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	var pipes [3][2]*os.File // config, status, info: {read, write}
	for i := range pipes {
		rd, wr, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: pipe: %w", ErrSetup, err)
		}
		defer rd.Close()
		defer wr.Close()
		pipes[i] = [2]*os.File{rd, wr}
	}
	cfgR, cfgW := pipes[0][0], pipes[0][1]
	statR, statW := pipes[1][0], pipes[1][1]
	infoR, infoW := pipes[2][0], pipes[2][1]

	runCtx, cancel := context.WithTimeout(ctx, p.spec.Timeout)
	defer cancel()
	stdout := &cappedBuffer{max: p.spec.MaxOutputBytes}
	stderr := &cappedBuffer{max: p.spec.MaxOutputBytes}
	var killed atomic.Bool
	nsInit := &sandboxInit{fd: -1}
	cmd := exec.CommandContext(runCtx, r.bwrap, args...)
	cmd.Env = []string{} // bwrap needs nothing of the gateway's environment
	if len(p.spec.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(p.spec.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{cfgR, statW, infoW} // fdConfig, fdStatus, fdInfo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		killed.Store(true)
		// Killing the sandbox's pid 1 makes the kernel kill every process
		// in its pid namespace, and bwrap exits once it has reaped it.
		if nsInit.kill() {
			return nil
		}
		return unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
	cmd.WaitDelay = killGrace

	start := r.cfg.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start bwrap: %w", ErrSetup, err)
	}
	cfgR.Close()
	statW.Close()
	infoW.Close()

	cfgDone := make(chan struct{})
	go func() {
		defer close(cfgDone)
		_ = json.NewEncoder(cfgW).Encode(stub)
		cfgW.Close()
	}()
	infoDone := make(chan struct{})
	go func() {
		defer close(infoDone)
		nsInit.open(infoR)
	}()
	statusDone := make(chan stubStatus, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(statR, maxStatusBytes))
		statusDone <- parseStatus(data)
	}()

	waitErr := cmd.Wait()
	// bwrap has exited. If it was killed rather than its pid 1, make sure
	// the rest of the sandbox is gone before the directories are removed.
	<-infoDone
	nsInit.wait(killGrace)
	nsInit.close()
	duration := r.cfg.Now().Sub(start)
	_ = statR.SetReadDeadline(time.Now().Add(killGrace))
	status := <-statusDone
	<-cfgDone

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: run canceled: %w", err)
	}
	timedOut := killed.Load()
	code := exitCode(cmd.ProcessState)
	if timedOut {
		code = 128 + int(unix.SIGKILL)
	}
	switch {
	case status.err != "":
		return nil, fmt.Errorf("%w: %s", ErrSetup, status.err)
	case !status.started && !timedOut && nsInit.started:
		return nil, fmt.Errorf("%w: the init stub did not start: %s must call sandbox.IsInit and sandbox.InitMain first thing in main (exit %d: %s)",
			ErrSetup, r.initPath, code, firstLine(stderr.Bytes()))
	case !status.started && !timedOut:
		return nil, fmt.Errorf("%w: bwrap failed (exit %d): %s", ErrSetup, code, firstLine(stderr.Bytes()))
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !timedOut && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("%w: wait for bwrap: %w", ErrSetup, waitErr)
	}

	res := &Result{
		ExitCode:  code,
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		TimedOut:  timedOut,
		Truncated: stdout.truncated || stderr.truncated,
		Duration:  duration,
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "sandbox run",
		slog.String("command", filepath.Base(p.spec.Command[0])),
		slog.Bool("probe", stub.Probe),
		slog.Int("exitCode", res.ExitCode),
		slog.Bool("timedOut", res.TimedOut),
		slog.Duration("duration", res.Duration),
		slog.Int("stdoutBytes", len(res.Stdout)),
		slog.Int("stderrBytes", len(res.Stderr)),
		slog.Bool("truncated", res.Truncated),
		slog.Bool("egress", stub.EgressSocket != ""),
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
