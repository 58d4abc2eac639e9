package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

func TestPrepareIdempotencyClaim(t *testing.T) {
	t.Parallel()
	clock := time.Date(2030, 1, 2, 3, 4, 5, 6789, time.FixedZone("X", 3600))
	c, err := store.PrepareIdempotencyClaim(store.IdempotencyClaim{Key: "k", Call: "c", Window: time.Minute}, clock)
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 2, 2, 4, 5, 6000, time.UTC), c.Now, "the clock fills Now, stored as UTC microseconds")
	require.Equal(t, time.Date(2030, 1, 2, 2, 3, 5, 6000, time.UTC), store.IdempotencyExpiry(c))

	tests := []struct {
		name string
		c    store.IdempotencyClaim
	}{
		{"no key", store.IdempotencyClaim{Call: "c"}},
		{"no call", store.IdempotencyClaim{Key: "k"}},
		{"negative window", store.IdempotencyClaim{Key: "k", Call: "c", Window: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := store.PrepareIdempotencyClaim(tc.c, clock)
			require.Error(t, err)
		})
	}
}

func TestPrepareUsageCharges(t *testing.T) {
	t.Parallel()
	w := time.Date(2030, 1, 2, 3, 0, 0, 999, time.FixedZone("X", 3600))
	got, err := store.PrepareUsageCharges([]store.UsageCharge{{UsageKey: store.UsageKey{Key: "k", WindowStart: w}, Calls: 1}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 2, 2, 0, 0, 0, time.UTC), got[0].WindowStart)

	tests := []struct {
		name string
		c    store.UsageCharge
	}{
		{"no key", store.UsageCharge{Calls: 1}},
		{"negative calls", store.UsageCharge{UsageKey: store.UsageKey{Key: "k"}, Calls: -1}},
		{"negative max calls", store.UsageCharge{UsageKey: store.UsageKey{Key: "k"}, MaxCalls: -1}},
		{"negative cost", store.UsageCharge{UsageKey: store.UsageKey{Key: "k"}, Cost: -0.5}},
		{"NaN cost", store.UsageCharge{UsageKey: store.UsageKey{Key: "k"}, Cost: math.NaN()}},
		{"infinite max cost", store.UsageCharge{UsageKey: store.UsageKey{Key: "k"}, MaxCost: math.Inf(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := store.PrepareUsageCharges([]store.UsageCharge{tc.c})
			require.Error(t, err)
		})
	}
}

func TestUsageChargeRefusedAlone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    store.UsageCharge
		want bool
	}{
		{"no caps", store.UsageCharge{Calls: 100, Cost: 100}, false},
		{"at the calls cap", store.UsageCharge{Calls: 3, MaxCalls: 3}, false},
		{"past the calls cap", store.UsageCharge{Calls: 4, MaxCalls: 3}, true},
		{"at the cost cap", store.UsageCharge{Cost: 2, MaxCost: 2}, false},
		{"past the cost cap", store.UsageCharge{Cost: 2.5, MaxCost: 2}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, store.UsageChargeRefusedAlone(tc.c))
		})
	}
}

func TestSettleUsageTotals(t *testing.T) {
	t.Parallel()
	w := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	key := func(k string, start time.Time) store.UsageCharge {
		return store.UsageCharge{UsageKey: store.UsageKey{Key: k, WindowStart: start}}
	}
	charges := []store.UsageCharge{key("a", w), key("b", w), key("a", w), key("a", w.Add(time.Minute))}
	totals := []store.UsageTotal{{Calls: 1}, {Calls: 5}, {Calls: 2}, {Calls: 7}}
	store.SettleUsageTotals(charges, totals)
	require.Equal(t, []store.UsageTotal{{Calls: 2}, {Calls: 5}, {Calls: 2}, {Calls: 7}}, totals)
}
