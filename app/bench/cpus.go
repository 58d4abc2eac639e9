package bench

import "runtime"

func runtimeCPUs() int { return runtime.NumCPU() }

// PinCPUs confines the whole process, every thread it has and will have,
// to its first n CPUs, so that a benchmark measures what n cores serve
// while the runtime sizes itself for n as it does in a container of that
// size. restore gives the threads their former CPUs back. Where
// processor affinity cannot be set, PinCPUs returns an error.
func PinCPUs(n int) (restore func(), err error) { return pinCPUs(n) }
