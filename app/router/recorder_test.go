package router

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/store"
)

// TestMergeCharges checks that a batch's charges to one counter become one
// charge of their sum, in the order the counters first appear, and that a
// counter's other windows stay apart.
func TestMergeCharges(t *testing.T) {
	hour := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	key := func(k string, at time.Time) store.UsageKey { return store.UsageKey{Key: k, WindowStart: at} }
	got := mergeCharges([]store.UsageCharge{
		{UsageKey: key("agent/a", hour), Calls: 1, Cost: 0.25},
		{UsageKey: key("agent/a:tokens", hour), Calls: 30},
		{UsageKey: key("agent/a", hour.Local()), Calls: 1, Cost: 0.5},
		{UsageKey: key("agent/a", hour.Add(time.Hour)), Calls: 1, Cost: 1},
		{UsageKey: key("agent/a:tokens", hour), Calls: 12},
	})
	require.Equal(t, []store.UsageCharge{
		{UsageKey: key("agent/a", hour), Calls: 2, Cost: 0.75},
		{UsageKey: key("agent/a:tokens", hour), Calls: 42},
		{UsageKey: key("agent/a", hour.Add(time.Hour)), Calls: 1, Cost: 1},
	}, got)
}
