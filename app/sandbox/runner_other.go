//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// Runner runs commands in sandboxes. Sandboxing needs Linux (bubblewrap,
// Landlock, seccomp); elsewhere New always fails.
type Runner struct{}

// New returns ErrUnavailable: sandboxing needs Linux.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	return nil, fmt.Errorf("%w: sandboxing needs Linux (bubblewrap, Landlock, seccomp)", ErrUnavailable)
}

// Check returns ErrUnavailable: sandboxing needs Linux.
func (r *Runner) Check(ctx context.Context) error {
	return fmt.Errorf("%w: sandboxing needs Linux", ErrUnavailable)
}

// Run returns ErrUnavailable: sandboxing needs Linux.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Result, error) {
	return nil, fmt.Errorf("%w: sandboxing needs Linux", ErrUnavailable)
}

// InitMain reports that the init stub needs Linux and returns a failure
// exit code.
func InitMain(args []string) int {
	fmt.Fprintln(os.Stderr, "warden sandbox init: sandboxing needs Linux")
	return exitStubFailed
}

// Process is a command running in a sandbox. Sandboxing needs Linux.
type Process struct{}

// Start returns ErrUnavailable: sandboxing needs Linux.
func (r *Runner) Start(ctx context.Context, spec Spec) (*Process, error) {
	return nil, fmt.Errorf("%w: sandboxing needs Linux", ErrUnavailable)
}

// Stdin is nil: sandboxing needs Linux.
func (p *Process) Stdin() io.WriteCloser { return nil }

// Stdout is nil: sandboxing needs Linux.
func (p *Process) Stdout() io.ReadCloser { return nil }

// Stderr is empty: sandboxing needs Linux.
func (p *Process) Stderr() []byte { return nil }

// Done is closed: sandboxing needs Linux.
func (p *Process) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Wait returns at once: sandboxing needs Linux.
func (p *Process) Wait() Exit { return Exit{} }

// Kill does nothing: sandboxing needs Linux.
func (p *Process) Kill() {}

// Stop returns at once: sandboxing needs Linux.
func (p *Process) Stop(grace time.Duration) Exit { return Exit{} }
