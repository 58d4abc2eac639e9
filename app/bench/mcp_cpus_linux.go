package bench

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs the process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the CPUs of the process: %w", err)
	}
	var out []int
	for cpu := range cpuSetSize {
		if set.IsSet(cpu) {
			out = append(out, cpu)
		}
	}
	return out, nil
}

// pinCPUSet confines every thread of the process to cpus; restore gives
// them their former CPUs back.
func pinCPUSet(cpus []int) (restore func(), err error) {
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, fmt.Errorf("read the CPUs of the process: %w", err)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := setAllThreads(&set); err != nil {
		_ = setAllThreads(&was)
		return nil, err
	}
	return func() { _ = setAllThreads(&was) }, nil
}

// PinMCPServer confines the serving process of `warden bench mcp` (every
// thread it has and will have) to the one CPU cpu.
func PinMCPServer(cpu int) (restore func(), err error) { return pinCPUSet([]int{cpu}) }
