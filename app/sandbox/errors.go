package sandbox

import "errors"

// Sentinel errors of the package. Every error a Runner returns wraps one of
// them (or a context error), so callers can tell a broken host from a broken
// Tool from a command that merely failed (which is a Result, not an error).
var (
	// ErrUnavailable means sandboxing cannot work on this host: bwrap is
	// missing, the kernel refuses user namespaces, Landlock or seccomp, or
	// the executable does not dispatch to InitMain.
	ErrUnavailable = errors.New("sandbox: unavailable on this host")
	// ErrInvalidSpec means a Spec breaks a rule; the message names every
	// offending field at once.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrSetup means one run could not be set up: bwrap failed, the init
	// stub could not apply a restriction, or the command could not be
	// found or executed inside the sandbox. The command did not run.
	ErrSetup = errors.New("sandbox: setup failed")
)
