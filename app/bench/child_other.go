//go:build !linux

package bench

import (
	"errors"
	"runtime"
)

func pinOtherCPUs(int) (func(), int, error) {
	return nil, 0, errors.New("pinning the process to CPUs needs Linux (" + runtime.GOOS + ")")
}
