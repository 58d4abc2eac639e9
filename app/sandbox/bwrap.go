package sandbox

import (
	"os"
	"strconv"
)

// systemRoots are the host directories every sandbox sees read-only, so
// that programs and their shared libraries run. On a merged-/usr system the
// top-level ones are symlinks, and are recreated as symlinks.
func systemRoots() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
}

// etcFiles are the parts of the host's /etc every sandbox sees read-only:
// what the dynamic loader, name-service lookups, TLS clients, locale and
// time zone code read. The rest of /etc (shadow, ssh host keys, the
// gateway's own configuration) stays out.
func etcFiles() []string {
	return []string{
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/alternatives",
		"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts", "/etc/gai.conf",
		"/etc/protocols", "/etc/services", "/etc/mime.types",
		"/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/debian_version",
		"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
		"/etc/pki/tls/certs", "/etc/pki/ca-trust",
	}
}

// devFiles are the device files the command may open read-write.
func devFiles() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
}

// hostSystemMounts returns the bwrap arguments that reproduce systemRoots
// and etcFiles, looked up on the host once, when the Runner is made.
func hostSystemMounts() []string {
	var args []string
	for _, p := range systemRoots() {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, p)
		case fi.IsDir():
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, p := range etcFiles() {
		args = append(args, "--ro-bind-try", p, p)
	}
	return args
}

// runDirs are the host side of one run's private directories.
type runDirs struct {
	scratch string // bound read-write at scratchPath
	tmp     string // bound read-write at tmpPath
	egress  string // holds the egress proxy's socket; "" when egress is off
}

// bwrapArgs builds the bwrap command line for one run. Every namespace is
// new (user, mount, pid, network, ipc, uts, cgroup), nested user namespaces
// are refused, every capability is dropped, the root is an empty tmpfs made
// read-only once the listed paths are bound into it, and the init stub is
// what bwrap runs.
func bwrapArgs(systemMounts []string, disableUserns bool, initPath string, dirs runDirs, binds []bind) []string {
	args := []string{
		"--unshare-all", "--unshare-user",
		"--cap-drop", "ALL",
		"--die-with-parent", "--new-session",
		"--clearenv",
		"--hostname", "sandbox",
		"--info-fd", strconv.Itoa(fdInfo),
	}
	if disableUserns {
		args = append(args, "--disable-userns")
	}
	args = append(args, systemMounts...)
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--bind", dirs.scratch, scratchPath,
		"--bind", dirs.tmp, tmpPath,
		"--ro-bind", initPath, stubPath,
	)
	if dirs.egress != "" {
		args = append(args, "--ro-bind", dirs.egress, egressDir)
	}
	for _, b := range binds {
		op := "--ro-bind"
		if b.write {
			op = "--bind"
		}
		args = append(args, op, b.src, b.dst)
	}
	return append(args,
		"--remount-ro", "/",
		"--chdir", scratchPath,
		"--", stubPath, initArg,
	)
}

// landlockRules are the paths the command may use; Landlock denies the
// rest, including the stub's own binary and (from ABI 9, which restricts
// connecting to unix sockets) the egress socket, which would only lead to
// the same filtering proxy anyway.
func landlockRules(binds []bind) []pathRule {
	var rules []pathRule
	for _, p := range systemRoots() {
		rules = append(rules, pathRule{Path: p, Exec: true, Optional: true})
	}
	rules = append(rules,
		pathRule{Path: "/etc", Optional: true},
		pathRule{Path: "/proc"},
		pathRule{Path: "/dev/shm", Write: true, Optional: true},
		pathRule{Path: scratchPath, Write: true},
		pathRule{Path: tmpPath, Write: true},
	)
	for _, d := range devFiles() {
		rules = append(rules, pathRule{Path: d, Write: true, Device: true, Optional: true})
	}
	for _, b := range binds {
		// What the Tool lets the command read it may also execute; what it
		// only lets the command write it may not, so what the command writes
		// does not become a new program (unless an AllowRead path covers it
		// too: Landlock rights add up along a hierarchy).
		rules = append(rules, pathRule{Path: b.dst, Write: b.write, Exec: !b.write})
	}
	return rules
}
