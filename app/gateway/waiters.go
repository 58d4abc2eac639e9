package gateway

import (
	"sync"
)

// waiters wakes the requests waiting for a call to change: a duplicate
// waiting for the original's result, GET ?wait=, an AOS hook waiting for
// an approval. This process's own writes wake them by name; writes of other
// replicas wake every waiter of the tenant (Store.Listen), which then reads
// its call again.
type waiters struct {
	mu sync.Mutex
	// by tenant, then call key "ns/name"
	m map[string]map[string]map[chan struct{}]struct{}
}

func newWaiters() *waiters { return &waiters{m: map[string]map[string]map[chan struct{}]struct{}{}} }

// add registers a waiter and returns its channel and a function that
// removes it.
func (w *waiters) add(tenant, key string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	byKey := w.m[tenant]
	if byKey == nil {
		byKey = map[string]map[chan struct{}]struct{}{}
		w.m[tenant] = byKey
	}
	set := byKey[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		byKey[key] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(set, ch)
		if len(set) == 0 {
			delete(byKey, key)
			if len(byKey) == 0 {
				delete(w.m, tenant)
			}
		}
	}
}

func signal(set map[chan struct{}]struct{}) {
	for ch := range set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wake signals the waiters of one call.
func (w *waiters) wake(tenant, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	signal(w.m[tenant][key])
}

// wakeTenant signals every waiter of tenant.
func (w *waiters) wakeTenant(tenant string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.m[tenant] {
		signal(set)
	}
}
