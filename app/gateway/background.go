package gateway

import (
	"sync"
	"time"
)

// resumeDrain bounds how long Close waits for resumed calls still running
// their tools. A call cut off here stays Running and is finished as
// interrupted by a later sweep (finishInterrupted).
const resumeDrain = 10 * time.Second

// background counts the work a Gateway runs after the request or job that
// started it returned (approved calls Resume claimed), so that Close can
// let it record its result before the recorder stops.
type background struct {
	mu     sync.Mutex
	closed bool
	n      int
	idle   chan struct{} // closed when n drops to zero after close
}

// hold counts one more piece of work; false once closing.
func (b *background) hold() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.n++
	return true
}

// release ends a piece of work hold counted.
func (b *background) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.n == 0 && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
}

// close refuses new work and waits up to d for the work running.
func (b *background) close(d time.Duration) {
	b.mu.Lock()
	b.closed = true
	if b.n == 0 {
		b.mu.Unlock()
		return
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	idle := b.idle
	b.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}
