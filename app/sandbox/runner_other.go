//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
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
