package sandbox

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. They change the kernel
// or other processes, escape or rebuild the namespaces and mounts, or are
// large attack surface an OS tool has no use for. Names the running
// architecture lacks (iopl on arm64, say) are skipped.
func deniedSyscalls() []string {
	return []string{
		// Namespaces and mounts.
		"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		// Other processes.
		"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
		// Kernel and machine.
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"iopl", "ioperm", "vhangup", "lookup_dcookie", "uselib",
		// Attack surface.
		"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
		"open_by_handle_at", "name_to_handle_at", "fanotify_init",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	}
}

// cloneNamespaceFlags are the clone(2) flags that make new namespaces.
// CLONE_NEWTIME is left out: for clone(2) that bit is part of the exit
// signal, and clone3, which can carry it, is refused outright.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompPolicy is the deny-list filter: everything is allowed except
// deniedSyscalls and clone(2) with namespace flags (EPERM), and clone3
// (ENOSYS, whose struct argument a filter cannot inspect; glibc and Go fall
// back to clone(2) on ENOSYS).
func seccompPolicy() (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range deniedSyscalls() {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
				Names:  []string{"clone3"},
			},
			{
				Action: seccomp.ActionErrno, // EPERM
				Names:  names,
				NamesWithCondtions: []seccomp.NameWithConditions{{
					Name: "clone",
					Conditions: seccomp.ArgumentConditions{{
						Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags,
					}},
				}},
			},
		},
	}, nil
}

// applySeccomp loads the deny-list filter and a filter that refuses system
// calls made through another ABI (32-bit int 0x80 on x86-64), which would
// otherwise bypass the deny list: go-seccomp-bpf's filter allows what it
// does not recognise as its own architecture. Both apply to every thread;
// no_new_privs is set first, as the kernel requires without CAP_SYS_ADMIN.
func applySeccomp() error {
	policy, err := seccompPolicy()
	if err != nil {
		return err
	}
	if err := seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy:     policy,
	}); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return loadArchFilter()
}

// loadArchFilter installs a filter that fails every system call whose audit
// architecture is not the native one with ENOSYS.
func loadArchFilter() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	raw, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return fmt.Errorf("seccomp: assemble arch filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: load arch filter: %w", errno)
	}
	return nil
}
