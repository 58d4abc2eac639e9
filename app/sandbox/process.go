package sandbox

import "time"

// Exit is how a Process ended.
type Exit struct {
	// ExitCode is the command's exit status, or 128+N when signal N ended
	// it (137 when it was killed).
	ExitCode int
	// Killed reports that Kill, or Stop once its grace had passed, killed
	// the sandbox: the command did not exit by itself.
	Killed bool
	// Duration is the wall-clock time from starting bwrap until every
	// process of the sandbox had exited.
	Duration time.Duration
}

// DefaultStopGrace is how long Stop waits, by default, for a process to exit
// on its own once its stdin is closed.
const DefaultStopGrace = 5 * time.Second
