//go:build !linux

package bench

import (
	"errors"
	"runtime"
)

func allowedCPUs() ([]int, error) {
	return nil, errors.New("the split layout pins processes to CPUs, which needs Linux (" + runtime.GOOS + "): use --layout shared")
}

func pinCPUSet([]int) (func(), error) {
	return nil, errors.New("pinning the process to CPUs needs Linux (" + runtime.GOOS + ")")
}

// PinMCPServer confines the serving process of `warden bench mcp` to one
// CPU, which needs Linux.
func PinMCPServer(int) (func(), error) { return pinCPUSet(nil) }
