package gateway

import (
	"context"

	"github.com/warden-dev/warden/app/sandbox"
)

// Sandbox adapts a sandbox.Runner to OSRunner.
type Sandbox struct{ Runner *sandbox.Runner }

// RunTool runs job in the sandbox.
func (s Sandbox) RunTool(ctx context.Context, job OSJob) (*OSResult, error) {
	r, err := s.Runner.Run(ctx, sandbox.Spec{
		Command: job.Command, Stdin: job.Stdin, Timeout: job.Timeout, CPUSeconds: job.CPUSeconds, MemoryMB: job.MemoryMB,
		AllowRead: job.AllowRead, AllowWrite: job.AllowWrite, AllowHosts: job.AllowHosts, MaxOutputBytes: job.MaxOutputBytes,
	})
	if err != nil {
		return nil, err
	}
	return &OSResult{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, TimedOut: r.TimedOut, Truncated: r.Truncated, Duration: r.Duration}, nil
}
