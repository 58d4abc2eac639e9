package gateway

import "sync"

// aosCalls maps the AOS executionId of a function tool's call in flight to
// its record, so that steps/toolCallResult finds it without a query. A
// miss (another replica took the request, or a restart) falls back to a
// label query.
type aosCalls struct {
	mu sync.Mutex
	m  map[string]string
}

func newAOSCalls() *aosCalls { return &aosCalls{m: map[string]string{}} }

func aosKey(tenant, ns, agent, execution string) string {
	return tenant + "\x00" + ns + "\x00" + agent + "\x00" + execution
}

func (a *aosCalls) put(key, call string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) > 1<<16 {
		clear(a.m)
	}
	a.m[key] = call
}

func (a *aosCalls) take(key string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.m[key]
	delete(a.m, key)
	return c, ok
}
