// Package yield lets a goroutine doing long background work (a store
// writing a batch of records) step aside for every goroutine that has work,
// those whose network input has just arrived included.
//
// runtime.Gosched is not enough for that. It puts the caller on the global
// run queue, and the scheduler looks for goroutines made ready by the
// network only when both run queues are empty: a goroutine that keeps
// calling Gosched is picked again at once, and a request that arrived
// meanwhile waits until the whole batch is done (or until the runtime's
// monitor polls the network, up to 10 ms later). On one processor that was
// most of the model router's tail latency.
//
// Yield parks the caller until the runtime's next poll of the network: it
// makes an eventfd readable and waits for the poller to report it. Every
// goroutine already runnable runs first, and every goroutine whose input
// arrived is found by the same poll and queued with the caller.
package yield

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// Yielder yields as the package comment says. Its zero value, or a nil
// one, falls back to runtime.Gosched. It is safe for concurrent use.
type Yielder struct {
	p *poller
	// quantum is the least time between two yields (New).
	quantum time.Duration
	// start is when the Yielder was made; last is the end of the last
	// yield, as time since start (monotonic).
	start time.Time
	last  atomic.Int64
}

// New returns a Yielder that yields at most once every quantum: a call
// sooner after the last yield returns at once. A yield is not free (with
// the processor otherwise idle it can cost a hand-off between two
// threads), and work that yields every few microseconds would pay that
// many times over; a quantum bounds how long others wait for the work,
// and what the yields cost it. Where the platform has no eventfd, or the
// descriptor could not be had, it falls back to runtime.Gosched.
func New(quantum time.Duration) *Yielder {
	y := &Yielder{quantum: quantum, start: time.Now()}
	if p, err := newPoller(); err == nil {
		y.p = p
	}
	return y
}

// Yield returns once every goroutine that was runnable, or had network
// input waiting, when it was called has had its turn; or at once when the
// last yield ended less than the quantum ago.
func (y *Yielder) Yield() {
	if y == nil {
		runtime.Gosched()
		return
	}
	if y.quantum > 0 && time.Since(y.start)-time.Duration(y.last.Load()) < y.quantum {
		return
	}
	if y.p == nil || !y.p.wait() {
		runtime.Gosched()
	}
	y.last.Store(int64(time.Since(y.start)))
}

// Close releases the descriptor; Yield then falls back to
// runtime.Gosched.
func (y *Yielder) Close() error {
	if y == nil || y.p == nil {
		return nil
	}
	return y.p.close()
}

type ctxKey struct{}

// NewContext returns ctx carrying y, for Yield to use: the caller of a
// long piece of work chooses whether the code doing it steps aside for
// requests.
func NewContext(ctx context.Context, y *Yielder) context.Context {
	return context.WithValue(ctx, ctxKey{}, y)
}

// Yield yields with the Yielder ctx carries (NewContext), or with
// runtime.Gosched when it carries none.
func Yield(ctx context.Context) {
	y, _ := ctx.Value(ctxKey{}).(*Yielder)
	y.Yield()
}
