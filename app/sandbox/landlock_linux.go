package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is driven through golang.org/x/sys/unix rather than go-landlock:
// go-landlock v0.11.0 imports libcap/psx (to restrict every OS thread before
// ABI 8), which this module does not carry. The stub needs no thread
// synchronisation anyway: it restricts the one OS thread it has locked and
// then calls execve from that thread, and the new program inherits that
// thread's Landlock domain, seccomp filters and no_new_privs.

// landlockResolveUnix is LANDLOCK_ACCESS_FS_RESOLVE_UNIX (ABI 9), which
// x/sys/unix does not name yet.
const landlockResolveUnix = 1 << 16

// Filesystem access rights, grouped the way pathRule grants them.
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llExec  = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llDevice = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// llFile are the rights that apply to a file (rather than a directory);
	// a rule on a file may grant only these.
	llFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockABI returns the kernel's Landlock ABI version, or 0 when Landlock
// is missing or disabled.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledFS is every filesystem right the given ABI can restrict.
func handledFS(abi int) uint64 {
	var h uint64
	if abi >= 1 {
		h |= unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1 // EXECUTE … MAKE_SYM
	}
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		h |= landlockResolveUnix
	}
	return h
}

// handledScopes are the IPC scopes the given ABI can restrict: signals to and
// abstract unix sockets of processes outside the domain (the stub itself).
func handledScopes(abi int) uint64 {
	if abi >= 6 {
		return unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return 0
}

// applyLandlock restricts the calling OS thread (and what it executes) to the
// given rules, with every right the kernel can handle. The caller must have
// locked the goroutine to its thread and set no_new_privs.
func applyLandlock(rules []pathRule) error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("landlock: not supported by this kernel")
	}
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: handled, Scoped: handledScopes(abi)}
	// The kernel accepts a larger struct than it knows as long as the
	// unknown tail is zero, so older ABIs get Scoped = 0 and are fine.
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))

	for _, r := range rules {
		if err := addLandlockRule(int(rfd), r, handled); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict self: %w", errno)
	}
	return nil
}

func addLandlockRule(rulesetFD int, r pathRule, handled uint64) error {
	fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if r.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("landlock: open %s: %w", r.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %w", r.Path, err)
	}
	access := uint64(llRead)
	if r.Exec {
		access |= llExec
	}
	if r.Write {
		access |= llWrite
	}
	if r.Device {
		access |= llDevice
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFile
	}
	access &= handled
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock: add rule for %s: %w", r.Path, errno)
	}
	return nil
}
