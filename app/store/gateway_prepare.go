package store

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The functions below check and normalize the tool gateway's claims and
// charges the same way in every driver, so the drivers differ only in SQL.

// PrepareIdempotencyClaim checks a claim, fills Now from now when zero and
// returns it with Now in the stored form (UTC, microseconds). The call is
// required: an empty holder means "taken", so it cannot name a call.
func PrepareIdempotencyClaim(c IdempotencyClaim, now time.Time) (IdempotencyClaim, error) {
	switch {
	case c.Key == "":
		return c, errors.New("idempotency claim: key is required")
	case c.Call == "":
		return c, fmt.Errorf("idempotency claim of %q: call is required", c.Key)
	case c.Window < 0:
		return c, fmt.Errorf("idempotency claim of %q: window must not be negative, got %s", c.Key, c.Window)
	}
	if c.Now.IsZero() {
		c.Now = now
	}
	c.Now = storedTime(c.Now)
	return c, nil
}

// IdempotencyExpiry is the claimed_at at or before which an existing claim
// no longer blocks c: a claim blocks others for c.Window.
func IdempotencyExpiry(c IdempotencyClaim) time.Time {
	return storedTime(c.Now.Add(-c.Window))
}

// PrepareUsageCharges checks charges (a key, and counts, costs and caps
// that are finite and not negative: a negative charge would slip under any
// cap) and returns a copy with window starts in the stored form.
func PrepareUsageCharges(charges []UsageCharge) ([]UsageCharge, error) {
	out := make([]UsageCharge, len(charges))
	for i, c := range charges {
		switch {
		case c.Key == "":
			return nil, fmt.Errorf("usage charge %d: key is required", i)
		case c.Calls < 0 || c.MaxCalls < 0:
			return nil, fmt.Errorf("usage charge %d (%s): calls and maxCalls must not be negative", i, c.Key)
		case !finiteNonNegative(c.Cost) || !finiteNonNegative(c.MaxCost):
			return nil, fmt.Errorf("usage charge %d (%s): cost and maxCost must be finite and not negative", i, c.Key)
		}
		c.WindowStart = storedTime(c.WindowStart)
		out[i] = c
	}
	return out, nil
}

func finiteNonNegative(f float64) bool { return f >= 0 && !math.IsInf(f, 1) }

// PrepareUsageKeys checks keys and returns a copy with window starts in the
// stored form.
func PrepareUsageKeys(keys []UsageKey) ([]UsageKey, error) {
	out := make([]UsageKey, len(keys))
	for i, k := range keys {
		if k.Key == "" {
			return nil, fmt.Errorf("usage key %d: key is required", i)
		}
		k.WindowStart = storedTime(k.WindowStart)
		out[i] = k
	}
	return out, nil
}

// UsageChargeRefusedAlone reports whether c passes one of its caps on its
// own, so that no value of its counter could take it. Drivers refuse such a
// charge without writing: the capped upsert checks caps only when the
// counter row exists already.
func UsageChargeRefusedAlone(c UsageCharge) bool {
	return c.MaxCalls > 0 && c.Calls > c.MaxCalls || c.MaxCost > 0 && c.Cost > c.MaxCost
}

// UsageKeysOf returns the counters that charges name, in order.
func UsageKeysOf(charges []UsageCharge) []UsageKey {
	out := make([]UsageKey, len(charges))
	for i, c := range charges {
		out[i] = c.UsageKey
	}
	return out
}

// SettleUsageTotals gives every charge of a counter charged more than once
// in one operation the counter's value after the operation, which is the
// total returned for its last charge (drivers apply the charges of one
// counter in order). Charges must be prepared, totals as long as charges.
func SettleUsageTotals(charges []UsageCharge, totals []UsageTotal) {
	if len(charges) < 2 {
		return
	}
	type counter struct {
		key   string
		start int64
	}
	last := make(map[counter]int, len(charges))
	for i, c := range charges {
		last[counter{c.Key, c.WindowStart.UnixMicro()}] = i
	}
	if len(last) == len(charges) {
		return
	}
	for i, c := range charges {
		totals[i] = totals[last[counter{c.Key, c.WindowStart.UnixMicro()}]]
	}
}
