// Package sandbox runs the command of an OS tool (a Tool with spec.os) in a
// sandbox, for the tool gateway. A Runner takes a Spec (argv, stdin, limits,
// the paths and hosts the Tool allows) and returns a Result (exit code,
// bounded stdout and stderr, whether the time limit struck). Commands that
// fail are Results; errors mean the Spec was invalid, the sandbox could not
// be set up, or the context was canceled.
//
// Start runs a command the same way but keeps it running: a Process (an MCP
// server of transport stdio, for the MCP gateway) has pipes to its stdin
// and stdout, keeps the newest bytes of its stderr (bounded, with the
// Spec.Redact values masked), and runs until it exits, Kill, or Stop
// (close stdin, wait a grace period, then kill the sandbox). It gets every
// layer below except the wall-clock limit. Run and Start share the set-up
// and tear-down of a sandbox (launch_linux.go).
//
// # Layers
//
// Each run gets all of these, outermost first:
//
//   - Namespaces. bubblewrap (bwrap) starts the run in new user, mount, pid,
//     network, ipc, uts and cgroup namespaces, drops every capability,
//     refuses nested user namespaces (--disable-userns, bwrap 0.8+), starts
//     a new session (no TIOCSTI into the gateway's terminal) and dies with
//     the gateway (--die-with-parent). The environment is cleared.
//   - A read-only root holding only what programs need: /usr and the
//     /bin, /sbin, /lib* entries (as symlinks on merged-/usr systems), a
//     short list of /etc files (loader cache, passwd/group, nsswitch, hosts,
//     time zone, CA certificates; not shadow, not ssh keys, not the
//     gateway's configuration), a fresh /proc for the pid namespace and a
//     minimal /dev. Spec.AllowRead paths are bound read-only and
//     Spec.AllowWrite paths read-write, each at its own path; nothing else
//     of the host exists inside.
//   - Scratch space. A new host directory per run is the working directory
//     and HOME at /scratch, another one is /tmp; both are removed when Run
//     returns.
//   - Landlock, applied by the init stub (below) to the command: read and
//     execute under the system directories and AllowRead paths, read under
//     /etc and /proc, read and write (no execute) under /scratch, /tmp,
//     /dev/shm and AllowWrite paths, read and write on /dev/null, zero,
//     full, random, urandom and tty. Everything else is denied, including
//     listing / and the stub's own binary. With ABI 6+ the command can
//     neither signal nor reach the abstract sockets of processes outside
//     its domain.
//   - seccomp, a deny list with EPERM: mount, umount2, pivot_root, chroot,
//     the new mount API (fsopen, fsconfig, fsmount, fspick, move_mount,
//     open_tree, mount_setattr), unshare, setns and clone with namespace
//     flags; ptrace, process_vm_readv/writev, kcmp, pidfd_getfd,
//     process_madvise; module loading, kexec, reboot, swapon/swapoff, acct,
//     syslog, quotactl, clock and time setting, iopl/ioperm, vhangup,
//     lookup_dcookie, uselib; bpf, perf_event_open, userfaultfd, keyctl,
//     add_key, request_key, open_by_handle_at, name_to_handle_at,
//     fanotify_init and io_uring. clone3 fails with ENOSYS (its flags cannot
//     be inspected; libc falls back to clone), as does every call through a
//     foreign ABI (32-bit int 0x80 on x86-64). no_new_privs is set.
//   - rlimits: RLIMIT_CPU from Spec.CPUSeconds (SIGXCPU, then SIGKILL a
//     second later), RLIMIT_AS from Spec.MemoryMB, no core dumps.
//   - Wall clock: when Spec.Timeout passes, the sandbox's pid 1 is killed
//     through a pidfd, which makes the kernel kill every process of the pid
//     namespace. Run returns only once they are all gone (and so do a
//     Process's Stop and Wait).
//   - Egress. Without Spec.AllowHosts the network namespace has nothing but
//     its own loopback. With it, the Runner serves an HTTP proxy on a unix
//     socket bound into the sandbox; it tunnels CONNECT and forwards
//     absolute http:// requests to the allowed host:port pairs only (403
//     for the rest) and resolves names itself. Inside, the stub forwards a
//     loopback TCP port to that socket and sets HTTP_PROXY, HTTPS_PROXY,
//     http_proxy and https_proxy for the command. There is still no route
//     out: a direct connection fails even to an allowed host.
//
// # The init stub
//
// Landlock, seccomp and the rlimits must be applied inside the namespaces,
// right before the command runs, so bwrap does not run the command itself:
// it runs the gateway's own binary (bound read-only at /.sandbox/init) with
// a reserved argv[1]. That binary's main must therefore start with
//
//	if sandbox.IsInit(os.Args) {
//		os.Exit(sandbox.InitMain(os.Args))
//	}
//
// The stub reads its configuration from a pipe (never argv or the
// environment, which other processes can see), applies the restrictions to
// its own thread and executes the command in its place. With egress it
// stays alive as the command's parent to forward connections, and a second
// stage of the same binary restricts itself and executes the command. New
// runs an empty sandbox through all of this (Check) and fails with
// ErrUnavailable when any layer does not work, including a binary that
// does not call InitMain, or a host without bwrap (install the Debian
// package bubblewrap).
//
// # Limits
//
// What this package does not do, so that callers do not assume it:
//
//   - The sandboxed processes run as the gateway's own uid (uid 0 inside is
//     mapped to it). When the gateway runs as root they cannot use any
//     capability, but they own root-owned files for permission checks, so
//     an AllowRead or AllowWrite path grants exactly what root may do
//     there. Run the gateway as an unprivileged user where you can.
//   - seccomp is a deny list: system calls added to Linux later are
//     allowed until listed. Landlock restricts only what the kernel's ABI
//     supports (truncate from ABI 3, device ioctl from 5, scopes from 6,
//     pathname unix sockets from 9); it does not cover stat, chmod, chown
//     or utime of visible files. go-landlock is not used: v0.11.0 needs
//     libcap/psx, which this module does not carry, and the stub does not
//     need its thread synchronisation.
//   - RLIMIT_AS limits address space, not resident memory, and applies per
//     process, not per tree; runtimes that reserve large address ranges
//     (Go, the JVM) need generous values. There are no cgroup limits: no
//     memory.max, no pids.max (a fork bomb is bounded only by Timeout and
//     RLIMIT_CPU per process), and disk use in /scratch and /tmp is bounded
//     only by the host file system under Config.TempDir.
//   - Egress covers HTTP and HTTPS from clients that honour the proxy
//     variables; there is no DNS, UDP or raw TCP. A host is matched by the
//     name the client asks for and resolved on the gateway's host, so an
//     allowed name that resolves to an internal address reaches it, and
//     an allowed IP or loopback entry reaches the gateway host's own
//     services. Tunneled TLS is not inspected.
//   - The command sees some facts about the host: the kernel version, CPU
//     and memory counts in /proc, the users in /etc/passwd.
package sandbox
