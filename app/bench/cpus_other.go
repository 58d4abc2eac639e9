//go:build !linux

package bench

import (
	"errors"
	"runtime"
)

func pinCPUs(int) (func(), error) {
	return nil, errors.New("pinning the process to CPUs needs Linux (" + runtime.GOOS + ")")
}
