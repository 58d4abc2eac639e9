package store

import (
	"sync"
	"sync/atomic"
)

// Notifier fans "tenant changed" signals out to listeners without ever
// blocking the caller: each listener has its own goroutine and a coalescing
// set of pending tenants, so a slow listener delays only itself and sees
// each changed tenant at least once after the signal. Drivers call Notify
// after a commit that appended to the change log and implement Store.Listen
// with Listen.
type Notifier struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	// gens counts the signals per tenant (*atomic.Uint64), bumped before
	// any listener wakes, so a cache may compare it on every read.
	gens sync.Map
}

// Generation returns how many times tenant was signalled. It moves before
// Notify returns, so a reader that compares it with the value it loaded its
// cache at sees a commit that finished before it asked, while the
// listeners' goroutines may not have run yet.
func (n *Notifier) Generation(tenant string) uint64 {
	if g, ok := n.gens.Load(tenant); ok {
		return g.(*atomic.Uint64).Load()
	}
	return 0
}

type subscriber struct {
	fn      func(tenant string)
	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{}
	done    chan struct{}
}

// NewNotifier returns a notifier without listeners.
func NewNotifier() *Notifier {
	return &Notifier{subs: map[*subscriber]struct{}{}}
}

// Listen registers fn and returns a function that unregisters it. fn runs
// on a goroutine of its own, one call at a time. Once stop returns no new
// call starts (a call already running finishes); stop never waits, so fn
// may call it, and calling it twice is harmless.
func (n *Notifier) Listen(fn func(tenant string)) (stop func()) {
	s := &subscriber{
		fn:      fn,
		pending: map[string]struct{}{},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return func() {}
	}
	n.subs[s] = struct{}{}
	n.mu.Unlock()
	go s.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs, s)
			n.mu.Unlock()
			close(s.done)
		})
	}
}

// Notify signals every listener that tenant changed. It never blocks on a
// listener.
func (n *Notifier) Notify(tenant string) {
	g, ok := n.gens.Load(tenant)
	if !ok {
		g, _ = n.gens.LoadOrStore(tenant, new(atomic.Uint64))
	}
	g.(*atomic.Uint64).Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs {
		s.mu.Lock()
		s.pending[tenant] = struct{}{}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Close unregisters every listener.
func (n *Notifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for s := range n.subs {
		delete(n.subs, s)
		close(s.done)
	}
}

func (s *subscriber) run() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batch := s.pending
		s.pending = map[string]struct{}{}
		s.mu.Unlock()
		for tenant := range batch {
			select {
			case <-s.done:
				return
			default:
			}
			s.fn(tenant)
		}
	}
}
