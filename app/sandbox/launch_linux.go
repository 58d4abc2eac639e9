package sandbox

import (
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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// streams are the standard streams of a sandboxed command.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// launch is one sandbox from its set-up to its tear-down: what Run (one
// command to completion) and Start (a long-lived Process) share.
type launch struct {
	cmd    *exec.Cmd
	nsInit *sandboxInit
	stub   stubConfig
	now    func() time.Time
	start  time.Time

	statR      *os.File
	statusDone chan struct{} // closed once the stub's report is read
	status     stubStatus
	infoDone   chan struct{}
	cfgDone    chan struct{}

	mu     sync.Mutex
	exited bool // bwrap was reaped: its pid and group may be reused

	cleanup []func() // undone in reverse order by wait
}

// startSandbox makes the run's directories and egress proxy, starts bwrap
// with the init stub and hands the stub its configuration. The calling
// goroutine must stay locked to its OS thread until wait returns: Pdeathsig
// and bwrap's --die-with-parent fire when the thread that started bwrap
// exits, not the process. On error nothing of the sandbox is left.
func (r *Runner) startSandbox(ctx context.Context, p *plan, probe bool, std streams) (_ *launch, err error) {
	l := &launch{now: r.cfg.Now, nsInit: &sandboxInit{fd: -1}, statusDone: make(chan struct{}), infoDone: make(chan struct{}), cfgDone: make(chan struct{})}
	defer func() {
		if err != nil {
			l.undo()
		}
	}()
	base, err := os.MkdirTemp(r.cfg.TempDir, "warden-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("%w: make run directory: %w", ErrSetup, err)
	}
	l.cleanup = append(l.cleanup, func() {
		if err := os.RemoveAll(base); err != nil {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "sandbox: remove run directory", slog.String("error", err.Error()))
		}
	})
	dirs := runDirs{scratch: filepath.Join(base, "scratch"), tmp: filepath.Join(base, "tmp")}
	for _, d := range []string{dirs.scratch, dirs.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("%w: make run directory: %w", ErrSetup, err)
		}
	}
	l.stub = stubConfig{
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
		l.cleanup = append(l.cleanup, func() { _ = os.RemoveAll(dir) })
		ln, err := net.Listen("unix", filepath.Join(dir, filepath.Base(egressSock)))
		if err != nil {
			return nil, fmt.Errorf("%w: egress proxy: %w", ErrSetup, err)
		}
		// The proxy lives as long as the sandbox, which may outlive ctx
		// (a Process); wait stops it.
		l.cleanup = append(l.cleanup, serveEgress(context.WithoutCancel(ctx), ln, p.egress, r.cfg.Logger))
		dirs.egress = dir
		l.stub.EgressSocket = egressSock
	}
	if err := l.exec(r, bwrapArgs(r.systemMounts, r.disableUserns, r.initPath, dirs, p.binds), std); err != nil {
		return nil, err
	}
	return l, nil
}

// exec starts bwrap and the goroutines that feed the stub its config,
// track the sandbox's pid 1 and read the stub's report.
func (l *launch) exec(r *Runner, args []string, std streams) error {
	var pipes [3][2]*os.File // config, status, info: {read, write}
	for i := range pipes {
		rd, wr, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("%w: pipe: %w", ErrSetup, err)
		}
		pipes[i] = [2]*os.File{rd, wr}
	}
	cfgR, cfgW := pipes[0][0], pipes[0][1]
	statR, statW := pipes[1][0], pipes[1][1]
	infoR, infoW := pipes[2][0], pipes[2][1]
	// The child's ends are the child's once it started; until then, and
	// on failure, they are closed here.
	closeChildEnds := func() {
		_ = cfgR.Close()
		_ = statW.Close()
		_ = infoW.Close()
	}

	cmd := exec.Command(r.bwrap, args...)
	cmd.Env = []string{} // bwrap needs nothing of the gateway's environment
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.stdin, std.stdout, std.stderr
	cmd.ExtraFiles = []*os.File{cfgR, statW, infoW} // fdConfig, fdStatus, fdInfo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = killGrace

	l.start = l.now()
	if err := cmd.Start(); err != nil {
		closeChildEnds()
		for _, f := range []*os.File{cfgW, statR, infoR} {
			_ = f.Close()
		}
		return fmt.Errorf("%w: start bwrap: %w", ErrSetup, err)
	}
	closeChildEnds()
	l.cmd, l.statR = cmd, statR

	go func() {
		defer close(l.cfgDone)
		_ = json.NewEncoder(cfgW).Encode(l.stub)
		_ = cfgW.Close()
	}()
	go func() {
		defer close(l.infoDone)
		l.nsInit.open(infoR)
		_ = infoR.Close()
	}()
	go func() {
		defer close(l.statusDone)
		// EOF comes when the stub executed the command (the descriptor is
		// close-on-exec there) or when the sandbox ended.
		data, _ := io.ReadAll(io.LimitReader(statR, maxStatusBytes))
		l.status = parseStatus(data)
	}()
	return nil
}

// kill kills every process of the sandbox, unless bwrap was already
// reaped, and reports whether it sent a signal. Killing the sandbox's pid 1
// makes the kernel kill every process in its pid namespace, and bwrap
// exits once it has reaped it.
func (l *launch) kill() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.exited {
		return false
	}
	if l.nsInit.kill() {
		return true
	}
	return unix.Kill(-l.cmd.Process.Pid, unix.SIGKILL) == nil
}

// outcome is how a sandbox ended.
type outcome struct {
	waitErr  error
	status   stubStatus
	duration time.Duration
	code     int // exit code of bwrap, i.e. of the command
}

// wait waits until bwrap has exited and every process of the sandbox is
// gone, reads the stub's report and removes what startSandbox made.
func (l *launch) wait() outcome {
	waitErr := l.cmd.Wait()
	l.mu.Lock()
	l.exited = true
	l.mu.Unlock()
	// bwrap has exited. If it was killed rather than its pid 1, make sure
	// the rest of the sandbox is gone before the directories are removed.
	<-l.infoDone
	l.nsInit.wait(killGrace)
	l.nsInit.close()
	o := outcome{waitErr: waitErr, duration: l.now().Sub(l.start), code: exitCode(l.cmd.ProcessState)}
	_ = l.statR.SetReadDeadline(time.Now().Add(killGrace))
	<-l.statusDone
	_ = l.statR.Close()
	<-l.cfgDone
	o.status = l.status
	l.undo()
	return o
}

// undo removes the run's directories and stops its egress proxy.
func (l *launch) undo() {
	for i := len(l.cleanup) - 1; i >= 0; i-- {
		l.cleanup[i]()
	}
	l.cleanup = nil
}

// setupError says why a sandbox did not get as far as executing its
// command, or nil when it did. killed reports that the sandbox was killed
// on purpose (a time limit, a stop) before the stub could report.
func (l *launch) setupError(r *Runner, o outcome, killed bool, stderr []byte) error {
	switch {
	case o.status.err != "":
		return fmt.Errorf("%w: %s", ErrSetup, o.status.err)
	case !o.status.started && !killed && l.nsInit.started:
		return fmt.Errorf("%w: the init stub did not start: %s must call sandbox.IsInit and sandbox.InitMain first thing in main (exit %d: %s)",
			ErrSetup, r.initPath, o.code, firstLine(stderr))
	case !o.status.started && !killed:
		return fmt.Errorf("%w: bwrap failed (exit %d): %s", ErrSetup, o.code, firstLine(stderr))
	}
	var exitErr *exec.ExitError
	if o.waitErr != nil && !killed && !errors.As(o.waitErr, &exitErr) && !errors.Is(o.waitErr, exec.ErrWaitDelay) {
		return fmt.Errorf("%w: wait for bwrap: %w", ErrSetup, o.waitErr)
	}
	return nil
}
