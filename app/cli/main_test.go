package cli

import (
	"os"
	"syscall"
	"testing"

	"github.com/warden-dev/warden/app/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init stub, as
// main.go does for warden: up probes the sandbox by running its own
// executable, and without this the probe would run this package's tests
// inside the sandbox until the probe's timeout.
func TestMain(m *testing.M) {
	if sandbox.IsInit(os.Args) {
		syscall.Exit(sandbox.InitMain(os.Args))
	}
	os.Exit(m.Run())
}
