package bench

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pinOtherCPUs confines the process to the CPUs it may use other than the
// first n (those PinCPUs(n) gives a child). It returns how many CPUs that
// leaves it; with none left it changes nothing and returns 0.
func pinOtherCPUs(n int) (restore func(), left int, err error) {
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, 0, fmt.Errorf("read the CPUs of the process: %w", err)
	}
	var set unix.CPUSet
	skip := n
	for cpu := 0; cpu < cpuSetSize; cpu++ {
		if !was.IsSet(cpu) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		set.Set(cpu)
		left++
	}
	if left == 0 {
		return func() {}, 0, nil
	}
	if err := setAllThreads(&set); err != nil {
		_ = setAllThreads(&was)
		return nil, 0, err
	}
	return func() { _ = setAllThreads(&was) }, left, nil
}
