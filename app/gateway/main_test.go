package gateway_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/warden-dev/warden/app/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init stub, as
// main.go does for warden.
func TestMain(m *testing.M) {
	if sandbox.IsInit(os.Args) {
		syscall.Exit(sandbox.InitMain(os.Args))
	}
	os.Exit(m.Run())
}
