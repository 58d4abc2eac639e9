package store

import (
	"context"
	"time"
)

// GatewayTx holds the tool gateway's shared state inside a tenant
// transaction: idempotency claims, which make a side effect happen once
// across retries and replicas, and usage counters, which enforce rate limits
// and budgets across replicas. Both are plain rows under the tenant's
// row-level security; neither appears in the change log.
type GatewayTx interface {
	// IdempotencyClaim claims c.Key in c.Namespace for the call c.Call. It
	// returns "" when the claim is taken: no claim existed, the existing
	// claim was released, it is older than c.Window at c.Now, or c.Force is
	// set. Otherwise it returns the name of the call that holds the claim
	// and changes nothing. Two transactions claiming the same key at once
	// (on one or several processes) serialize: exactly one gets "".
	IdempotencyClaim(ctx context.Context, c IdempotencyClaim) (holder string, err error)
	// IdempotencyRelease releases the claim of key in namespace if call
	// still holds it, so that a retry of a denied, failed, cancelled or
	// expired call runs again. Releasing a claim held by another call, or
	// none, changes nothing.
	IdempotencyRelease(ctx context.Context, namespace, key, call string) error
	// UsageCharge adds each charge to its counter, in order, all or none: a
	// charge that would take its counter above a hard cap (MaxCalls or
	// MaxCost, zero meaning no cap) stops the operation, the charges
	// already added are taken back, and exceeded is the index of the
	// refusing charge; -1 when every charge was added. totals holds each
	// counter's value after the operation (for the refusing charge and
	// those after it, the unchanged value).
	UsageCharge(ctx context.Context, charges []UsageCharge) (totals []UsageTotal, exceeded int, err error)
}

// GatewayReader reads the tool gateway's shared state.
type GatewayReader interface {
	// UsageGet returns the counters of keys in the window starting at
	// windowStart, zero for a counter never charged.
	UsageGet(ctx context.Context, keys []UsageKey) ([]UsageTotal, error)
}

// IdempotencyClaim is one claim of an idempotency key.
type IdempotencyClaim struct {
	// Namespace scopes the key.
	Namespace string
	// Key is the idempotency key.
	Key string
	// Call is the name of the ToolCall claiming the key.
	Call string
	// Now is the claim's time.
	Now time.Time
	// Window is how long a claim blocks others.
	Window time.Duration
	// Force takes the claim whoever holds it.
	Force bool
}

// UsageKey names one counter: a scope key such as "tool:default/crm.refund"
// and the start of its fixed window.
type UsageKey struct {
	Key         string
	WindowStart time.Time
}

// UsageCharge adds calls and cost to one counter, refusing to pass a hard
// cap.
type UsageCharge struct {
	UsageKey
	Calls int64
	Cost  float64
	// MaxCalls and MaxCost are hard caps; zero means none.
	MaxCalls int64
	MaxCost  float64
}

// UsageTotal is a counter's value.
type UsageTotal struct {
	Calls int64
	Cost  float64
}
