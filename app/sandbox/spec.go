package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Spec is one run of an OS tool's command. It mirrors a Tool's spec.os plus
// what the gateway adds per call (the input on stdin, extra environment).
type Spec struct {
	// Command is the argv. Command[0] is resolved inside the sandbox: a name
	// without a slash is looked up in the sandbox's PATH (the Env value, or
	// the default /usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin).
	Command []string
	// Stdin is written to the command's standard input (the tool's JSON
	// input). It is never logged.
	Stdin []byte
	// Env holds variables added to the sandbox's minimal environment
	// (PATH, HOME=/scratch, TMPDIR=/tmp, LANG=C.UTF-8), overriding those.
	// Nothing is inherited from the gateway's own environment.
	Env map[string]string
	// Timeout bounds the wall-clock time; when it passes, every process of
	// the sandbox is killed and Result.TimedOut is set. Zero means
	// Config.DefaultTimeout.
	Timeout time.Duration
	// CPUSeconds sets RLIMIT_CPU: the command gets SIGXCPU after this many
	// seconds of CPU time and SIGKILL one second later. Zero means no limit
	// beyond Timeout.
	CPUSeconds int64
	// MemoryMB sets RLIMIT_AS (address space, not resident memory) for the
	// command and each process it starts. Zero means no limit.
	MemoryMB int64
	// AllowRead are host paths (files or directories) made visible read-only
	// at the same path inside the sandbox; files under them may also be
	// executed. Nothing else of the host is visible except the system
	// directories listed in the package documentation.
	AllowRead []string
	// AllowWrite are host paths made visible read-write at the same path.
	// Files under them can be written but not executed.
	AllowWrite []string
	// AllowHosts are the "host" or "host:port" destinations the command may
	// reach through the egress proxy; a host without a port allows ports 80
	// and 443, and "*.example.com" allows every subdomain of example.com.
	// Empty means no network at all.
	AllowHosts []string
	// MaxOutputBytes caps the captured stdout and the captured stderr, each
	// (for a Process, the stderr it keeps: its newest bytes). Zero means
	// Config.DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Redact are values (the secrets among Env) masked as "[REDACTED]" in
	// the captured stderr, Result.Stderr and Process.Stderr, so that a
	// command that prints its environment does not carry them into error
	// messages. Stdout is the command's answer and is left alone.
	Redact []string
}

// Result is how a command ended. A command that ran but failed (non-zero
// exit, killed at its time limit) is a Result, not an error.
type Result struct {
	// ExitCode is the command's exit status, or 128+N when signal N ended
	// it (137 when it was killed at its time limit or memory limit).
	ExitCode int
	// Stdout is the captured standard output, at most MaxOutputBytes.
	Stdout []byte
	// Stderr is the captured standard error, at most MaxOutputBytes.
	Stderr []byte
	// TimedOut reports that Spec.Timeout passed and the sandbox was killed.
	TimedOut bool
	// Truncated reports that stdout or stderr went over MaxOutputBytes and
	// the rest was discarded.
	Truncated bool
	// Duration is the wall-clock time from starting bwrap until every
	// process of the sandbox had exited.
	Duration time.Duration
}

// Paths inside the sandbox.
const (
	scratchPath = "/scratch"         // per-run working directory and HOME
	tmpPath     = "/tmp"             // per-run temporary directory
	stubDir     = "/.sandbox"        // holds the init stub and the egress socket
	stubPath    = "/.sandbox/init"   // the executable, bound read-only
	egressDir   = "/.sandbox/egress" // the host-side proxy's socket directory
	egressSock  = "/.sandbox/egress/proxy.sock"
	defaultPATH = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
)

// reservedPaths are sandbox paths a Spec may neither bind nor bind under.
// /tmp itself is reserved, but host paths under /tmp may be bound (they
// land inside the per-run /tmp), since that is where temporary data lives.
func reservedPaths() []string {
	return []string{scratchPath, stubDir, "/proc", "/dev"}
}

// bind is one host path made visible in the sandbox.
type bind struct {
	src   string // host path, symlinks resolved
	dst   string // sandbox path, as the Spec spelled it (cleaned)
	write bool
	dir   bool
}

// plan is a validated Spec with its defaults applied.
type plan struct {
	spec   Spec
	binds  []bind    // sorted so that parents are mounted before children
	env    []string  // KEY=VALUE, sorted
	egress allowlist // empty: no network
}

// makePlan applies defaults, validates spec and resolves its host paths. All
// problems are reported at once, each naming its field. A process's spec
// (Start) has neither Stdin nor Timeout.
func makePlan(spec Spec, defaultTimeout time.Duration, defaultMaxOutput int64, process bool) (*plan, error) {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if process && len(spec.Stdin) > 0 {
		fail("stdin", "a process reads its standard input from Process.Stdin")
	}
	if process && spec.Timeout != 0 {
		fail("timeout", "a process runs until it exits or is stopped")
	}

	if spec.Timeout == 0 {
		spec.Timeout = defaultTimeout
	}
	if spec.MaxOutputBytes == 0 {
		spec.MaxOutputBytes = defaultMaxOutput
	}
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		fail("command", "must name a program")
	}
	for i, arg := range spec.Command {
		if strings.ContainsRune(arg, 0) {
			fail(fmt.Sprintf("command[%d]", i), "must not contain NUL")
		}
	}
	if spec.Timeout < 0 {
		fail("timeout", "must not be negative")
	}
	if spec.CPUSeconds < 0 {
		fail("cpuSeconds", "must not be negative")
	}
	if spec.MemoryMB < 0 {
		fail("memoryMB", "must not be negative")
	}
	if spec.MaxOutputBytes < 0 {
		fail("maxOutputBytes", "must not be negative")
	}

	env := map[string]string{"PATH": defaultPATH, "HOME": scratchPath, "TMPDIR": tmpPath, "LANG": "C.UTF-8"}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			fail(fmt.Sprintf("env[%q]", k), "names must be non-empty without '=' and values without NUL")
			continue
		}
		env[k] = v
	}
	p := &plan{spec: spec}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	slices.Sort(p.env)

	for i, path := range spec.AllowRead {
		b, err := resolveBind(path, false)
		if err != nil {
			fail(fmt.Sprintf("allowRead[%d]", i), "%v", err)
			continue
		}
		p.binds = append(p.binds, b)
	}
	for i, path := range spec.AllowWrite {
		b, err := resolveBind(path, true)
		if err != nil {
			fail(fmt.Sprintf("allowWrite[%d]", i), "%v", err)
			continue
		}
		p.binds = append(p.binds, b)
	}
	// Parents before children (a parent is a prefix, so it sorts first), and
	// for the same path the writable bind last, so it wins.
	slices.SortStableFunc(p.binds, func(a, b bind) int {
		if c := strings.Compare(a.dst, b.dst); c != 0 {
			return c
		}
		switch {
		case a.write == b.write:
			return 0
		case b.write:
			return -1
		default:
			return 1
		}
	})

	allow, hostErrs := parseAllowHosts(spec.AllowHosts)
	errs = append(errs, hostErrs...)
	p.egress = allow

	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, errors.Join(errs...))
	}
	return p, nil
}

// resolveBind checks one AllowRead or AllowWrite entry against the host.
func resolveBind(path string, write bool) (bind, error) {
	if !filepath.IsAbs(path) {
		return bind{}, fmt.Errorf("%q must be an absolute path", path)
	}
	dst := filepath.Clean(path)
	if dst == "/" || dst == tmpPath {
		return bind{}, fmt.Errorf("%q would expose too much: name a narrower path", path)
	}
	for _, r := range reservedPaths() {
		if dst == r || strings.HasPrefix(dst, r+"/") {
			return bind{}, fmt.Errorf("%q is reserved inside the sandbox (%s)", path, r)
		}
	}
	src, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return bind{}, fmt.Errorf("resolve %q on the host: %w", path, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return bind{}, fmt.Errorf("stat %q on the host: %w", path, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return bind{}, fmt.Errorf("%q is neither a directory nor a regular file", path)
	}
	return bind{src: src, dst: dst, write: write, dir: fi.IsDir()}, nil
}
