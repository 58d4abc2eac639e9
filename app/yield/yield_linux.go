package yield

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// poller is a non-blocking eventfd registered with the runtime's network
// poller.
type poller struct {
	f  *os.File
	rc syscall.RawConn
}

func newPoller() (*poller, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	// A non-blocking descriptor makes a File the runtime polls.
	f := os.NewFile(uintptr(fd), "yield")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &poller{f: f, rc: rc}, nil
}

// wait makes the eventfd readable and parks until the poller reports it,
// then drains it. The write happens inside Read, after Read armed the wait
// (an edge reported before that would be forgotten). It reports false
// when the descriptor failed; it then did not wait.
func (p *poller) wait() bool {
	var one, buf [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	written, ok := false, true
	err := p.rc.Read(func(fd uintptr) bool {
		if written {
			// Drained: done. EAGAIN would mean the count is gone
			// without a read of ours: write it again and wait.
			if _, err := unix.Read(int(fd), buf[:]); err != unix.EAGAIN {
				return true
			}
		}
		if _, err := unix.Write(int(fd), one[:]); err != nil {
			ok = false
			return true
		}
		written = true
		return false
	})
	return ok && err == nil
}

func (p *poller) close() error { return p.f.Close() }
