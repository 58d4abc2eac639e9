package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"
)

// Process is a command running in a sandbox until it exits or is stopped,
// such as an MCP server that speaks over its stdin and stdout. It gets
// every layer Run gives a command (namespaces, the read-only root, scratch
// space, Landlock, seccomp, rlimits, egress) except the wall-clock limit:
// it runs until Stop or Kill, or until it exits by itself. Its stderr is
// kept, bounded and redacted, for error messages.
type Process struct {
	l       *launch
	log     *slog.Logger
	command string // base name of argv[0], for logs
	stdin   *os.File
	stdout  *os.File
	stderr  *tailBuffer
	redact  []string
	done    chan struct{}
	out     outcome // set before done is closed
	killed  atomic.Bool
}

// Start starts spec.Command in a new sandbox and returns once the command
// has been executed in it. spec.Stdin and spec.Timeout must be empty (a
// process reads Process.Stdin and runs until stopped); spec.MaxOutputBytes
// bounds the stderr kept (its newest bytes). ctx bounds the start only. The
// errors are those of Run: ErrInvalidSpec, ErrSetup (the sandbox could not
// be set up or the command not executed), or ctx's.
func (r *Runner) Start(ctx context.Context, spec Spec) (*Process, error) {
	p, err := makePlan(spec, r.cfg.DefaultTimeout, r.cfg.DefaultMaxOutputBytes, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: start canceled: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: pipe: %w", ErrSetup, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("%w: pipe: %w", ErrSetup, err)
	}
	proc := &Process{
		log: r.cfg.Logger, command: filepath.Base(p.spec.Command[0]),
		stdin: inW, stdout: outR, redact: p.spec.Redact, done: make(chan struct{}),
		stderr: &tailBuffer{max: int(p.spec.MaxOutputBytes)},
	}
	launched := make(chan error, 1)
	go proc.run(ctx, r, p, inR, outW, launched)
	if err := <-launched; err != nil {
		proc.closePipes()
		return nil, err
	}
	// The stub's report ends when it executed the command or failed to.
	select {
	case <-proc.l.statusDone:
	case <-ctx.Done():
		proc.l.kill()
		<-proc.done
		proc.closePipes()
		return nil, fmt.Errorf("sandbox: start canceled: %w", ctx.Err())
	}
	if st := proc.l.status; st.err != "" || !st.started {
		<-proc.done // the sandbox ends by itself: the command never ran
		proc.closePipes()
		if err := proc.l.setupError(r, proc.out, false, proc.Stderr()); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the command did not start (exit %d)", ErrSetup, proc.out.code)
	}
	proc.log.LogAttrs(ctx, slog.LevelDebug, "sandbox process started",
		slog.String("command", proc.command), slog.Bool("egress", proc.l.stub.EgressSocket != ""))
	return proc, nil
}

// run starts the sandbox and waits for its end on a goroutine locked to
// its OS thread for the process's whole life (see startSandbox).
func (p *Process) run(ctx context.Context, r *Runner, plan *plan, inR, outW *os.File, launched chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l, err := r.startSandbox(ctx, plan, false, streams{stdin: inR, stdout: outW, stderr: p.stderr})
	// The sandbox has its own copies of the child's ends.
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		launched <- err
		return
	}
	p.l = l
	launched <- nil
	p.out = l.wait()
	close(p.done)
	p.log.LogAttrs(context.Background(), slog.LevelDebug, "sandbox process exited",
		slog.String("command", p.command), slog.Int("exitCode", p.out.code), slog.Duration("duration", p.out.duration))
}

// Stdin is the command's standard input. Closing it is how a well-behaved
// server is asked to exit.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the command's standard output; it reads EOF once every
// process of the sandbox has exited.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Stderr returns the newest bytes the command wrote to its standard
// error, at most Spec.MaxOutputBytes, with the Spec.Redact values masked.
func (p *Process) Stderr() []byte { return p.stderr.redacted(p.redact) }

// Done is closed once every process of the sandbox has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until every process of the sandbox has exited and says how
// the command ended.
func (p *Process) Wait() Exit {
	<-p.done
	return Exit{ExitCode: p.out.code, Killed: p.killed.Load(), Duration: p.out.duration}
}

// Kill kills every process of the sandbox at once; Wait reports the end.
func (p *Process) Kill() {
	if p.l.kill() {
		p.killed.Store(true)
	}
}

// Stop ends the process: it closes its stdin, waits up to grace (zero
// means DefaultStopGrace) for it to exit, then kills every process of the
// sandbox. It returns once they are all gone, and the run's directories
// removed.
func (p *Process) Stop(grace time.Duration) Exit {
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	_ = p.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
	exit := p.Wait()
	p.closePipes()
	return exit
}

// closePipes closes the gateway's ends of stdin and stdout.
func (p *Process) closePipes() {
	_ = p.stdin.Close()
	_ = p.stdout.Close()
}
