package e2e

import (
	"os"
	"syscall"
	"testing"

	"github.com/warden-dev/warden/app/sandbox"
)

// TestMain lets the test binary serve as the OS tool sandbox's init stub,
// as main.go does for warden: `warden up` runs in-process here and checks
// its sandbox by re-executing this binary.
func TestMain(m *testing.M) {
	if sandbox.IsInit(os.Args) {
		syscall.Exit(sandbox.InitMain(os.Args))
	}
	os.Exit(m.Run())
}
