// Command warden is the control plane and tool gateway for AI agent fleets:
// `warden up` runs it locally, and the other subcommands manage resources.
// Everything lives in app/cli; main only wires the process's signals.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/warden-dev/warden/app/cli"
	"github.com/warden-dev/warden/app/sandbox"
)

func main() {
	// The sandbox of OS tools re-executes this binary as its init stub,
	// which applies Landlock and seccomp before running the command.
	if sandbox.IsInit(os.Args) {
		os.Exit(sandbox.InitMain(os.Args))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args)
	stop()
	os.Exit(code)
}
