package oidc

import (
	"sync"
	"time"
)

// maxBuckets bounds the limiter's memory; when reached, full buckets (keys
// that have been quiet for a whole window) are dropped first.
const maxBuckets = 100_000

// Limiter is an in-memory token-bucket rate limiter keyed by string (a
// client IP, an e-mail). Each key holds at most Attempts tokens, refilled at
// Attempts per Window. It limits one process; replicas limit separately,
// which still bounds guessing to replicas × Attempts per window.
type Limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	burst   float64
	rate    float64 // tokens per second
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewLimiter returns a limiter allowing attempts per window per key.
func NewLimiter(rl RateLimit, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, burst: float64(rl.Attempts), rate: float64(rl.Attempts) / rl.Window.Seconds(), buckets: map[string]*bucket{}}
}

// Allow takes one token from key's bucket and reports whether there was
// one; when not, retryAfter says when the next token arrives.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, found := l.buckets[key]
	if !found {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

func (l *Limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets { // everyone is active: start over rather than grow
		l.buckets = map[string]*bucket{}
	}
}
