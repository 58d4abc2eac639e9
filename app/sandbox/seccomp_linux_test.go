package sandbox

import (
	"runtime"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/require"
)

func TestSeccompPolicy(t *testing.T) {
	t.Parallel()
	policy, err := seccompPolicy()
	require.NoError(t, err)
	insts, err := policy.Assemble()
	require.NoError(t, err)
	require.NotEmpty(t, insts)

	denied := policy.Syscalls[1].Names
	for _, name := range []string{"ptrace", "mount", "umount2", "pivot_root", "unshare", "setns", "bpf",
		"perf_event_open", "keyctl", "kexec_load", "init_module", "process_vm_readv", "userfaultfd", "open_by_handle_at"} {
		require.Contains(t, denied, name)
	}
	require.Equal(t, "clone", policy.Syscalls[1].NamesWithCondtions[0].Name)
	require.Equal(t, []string{"clone3"}, policy.Syscalls[0].Names)

	if runtime.GOARCH == "amd64" {
		// On x86-64 every listed name must exist: a typo would silently
		// drop a denial.
		info, err := arch.GetInfo("")
		require.NoError(t, err)
		for _, name := range deniedSyscalls() {
			_, ok := info.SyscallNames[name]
			require.True(t, ok, "unknown syscall %q", name)
		}
		require.Equal(t, len(deniedSyscalls()), len(denied))
		require.False(t, slices.Contains(denied, "clone"))
	}
}

func TestHandledFS(t *testing.T) {
	t.Parallel()
	require.Zero(t, handledFS(0))
	require.Equal(t, uint64(0x1fff), handledFS(1))
	require.Less(t, handledFS(2), handledFS(3))
	require.Equal(t, handledFS(3), handledFS(4), "ABI 4 adds network rights only")
	require.Less(t, handledFS(4), handledFS(5))
	require.Zero(t, handledScopes(5))
	require.NotZero(t, handledScopes(6))
}
