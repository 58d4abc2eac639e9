package sandbox

// The executable bound into the sandbox is the gateway's own binary, started
// with one of these as argv[1]. initArg starts the init stub; execArg is the
// stub's second stage, which it starts itself when it stays alive to forward
// egress (see InitMain).
const (
	initArg = "__warden-sandbox-init"
	execArg = "__warden-sandbox-exec"
)

// File descriptors the Runner passes to bwrap and bwrap passes on to the init
// stub (bwrap keeps descriptors it is not told about open).
const (
	fdConfig = 3 // read: the stubConfig as JSON, then EOF
	fdStatus = 4 // write: statusStarted, then an error line or nothing
	fdInfo   = 5 // bwrap's --info-fd; bwrap closes it before the stub runs
)

// Lines the stub writes to fdStatus. The descriptor is close-on-exec in the
// last stage, so a Runner that reads statusStarted and then EOF knows the
// command was executed.
const (
	statusStarted = "started"
	statusError   = "error: "
)

// Exit codes of the stub when it fails before executing the command.
const (
	exitStubFailed = 125
	exitNotFound   = 127
)

// stubConfig is what the Runner tells the init stub, as JSON on fdConfig. It
// travels through a pipe rather than argv or the environment because Env may
// hold secrets and argv is visible to every process on the host.
type stubConfig struct {
	// Argv is the command; Argv[0] is resolved with the PATH in Env.
	Argv []string `json:"argv"`
	// Env is the command's whole environment (KEY=VALUE).
	Env []string `json:"env"`
	// Paths are the Landlock rules; everything else is denied.
	Paths []pathRule `json:"paths"`
	// CPUSeconds is RLIMIT_CPU; 0 means unlimited.
	CPUSeconds int64 `json:"cpuSeconds,omitempty"`
	// MemoryBytes is RLIMIT_AS; 0 means unlimited.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// EgressSocket is the sandbox path of the host-side egress proxy's
	// socket; empty means the command gets no network.
	EgressSocket string `json:"egressSocket,omitempty"`
	// Probe makes the stub apply every restriction, check that Landlock
	// denies what it should, and exit 0 instead of executing Argv.
	Probe bool `json:"probe,omitempty"`
}

// pathRule grants access to one file hierarchy inside the sandbox.
type pathRule struct {
	Path string `json:"path"`
	// Write grants creating, writing, truncating, renaming and removing.
	Write bool `json:"write,omitempty"`
	// Exec grants executing files (and reading).
	Exec bool `json:"exec,omitempty"`
	// Device grants ioctl on device files (for /dev/null and friends).
	Device bool `json:"device,omitempty"`
	// Optional skips the rule when the path does not exist.
	Optional bool `json:"optional,omitempty"`
}

// IsInit reports whether args (normally os.Args) ask this process to act as
// the sandbox's init stub. A program whose binary a Runner uses as
// Config.InitPath must call it first thing in main:
//
//	if sandbox.IsInit(os.Args) {
//		os.Exit(sandbox.InitMain(os.Args))
//	}
func IsInit(args []string) bool {
	return len(args) > 1 && (args[1] == initArg || args[1] == execArg)
}
