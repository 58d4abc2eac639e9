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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args)
	stop()
	os.Exit(code)
}
