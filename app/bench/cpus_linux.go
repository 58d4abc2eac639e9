package bench

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cpuSetSize is the number of CPUs a unix.CPUSet holds (CPU_SETSIZE).
const cpuSetSize = 1024

func pinCPUs(n int) (func(), error) {
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, fmt.Errorf("read the CPUs of the process: %w", err)
	}
	if n <= 0 || n > was.Count() {
		return nil, fmt.Errorf("cannot pin to %d CPUs: the process may use %d", n, was.Count())
	}
	var set unix.CPUSet
	for cpu, left := 0, n; left > 0 && cpu < cpuSetSize; cpu++ {
		if was.IsSet(cpu) {
			set.Set(cpu)
			left--
		}
	}
	if err := setAllThreads(&set); err != nil {
		_ = setAllThreads(&was)
		return nil, err
	}
	return func() { _ = setAllThreads(&was) }, nil
}

// setAllThreads sets the affinity of every thread of the process. A new
// thread inherits the affinity of the thread that makes it, so a thread
// made while the list is read is caught by the second pass.
func setAllThreads(set *unix.CPUSet) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("list the threads of the process: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("set the CPUs of thread %d: %w", tid, err)
			}
		}
	}
	return nil
}
