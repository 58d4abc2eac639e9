package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
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

// BenchmarkPrepareToolCall prepares a tool call's two writes as the gateway
// makes them: the record (claim, create, event) and its result (status
// update, event).
func BenchmarkPrepareToolCall(b *testing.B) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	record := func() *resource.Object {
		return &resource.Object{
			APIVersion: resource.GroupVersion, Kind: "ToolCall",
			Metadata: resource.ObjectMeta{Name: "tc-01m838dznb0fw7fnhm4rpnd4vc", Namespace: "default",
				Labels:      map[string]string{"warden.dev/agent": "bench-bot", "warden.dev/tool": "bench.lookup"},
				Annotations: map[string]string{"warden.dev/environment": "dev"}},
			Spec: map[string]any{
				"agentRef": map[string]any{"name": "bench-bot"}, "toolRef": map[string]any{"name": "bench.lookup"},
				"approval":    map[string]any{"required": false, "status": "not_required"},
				"input":       map[string]any{"q": 1},
				"sideEffects": map[string]any{"idempotencyKey": "5da6bd9ad8b9ed1843b617068c6dbae6c3715e183f0be9b01d3583139f5b60e6", "level": "read_only"},
			},
			Status: map[string]any{"phase": "Running", "startedAt": "2026-11-23T03:50:40.043565274Z"},
		}
	}
	ev := events.Event{Type: "ToolCallRequested", Namespace: "default", Subject: "tc-01m838dznb0fw7fnhm4rpnd4vc",
		Data: map[string]any{"agent": "bench-bot", "tool": "bench.lookup", "sideEffect": "read_only", "approvalRequired": false}}
	b.ReportAllocs()
	for b.Loop() {
		rec := record()
		w := &store.CallWrite{Claim: &store.IdempotencyClaim{Namespace: "default", Key: "k", Call: rec.Metadata.Name, Window: time.Minute},
			Creates: []*resource.Object{rec}, Events: []events.Event{ev}}
		p, err := w.Prepare(now)
		if err != nil {
			b.Fatal(err)
		}
		stored := p.Creates[0].Stored(7)
		done := &store.CallWrite{
			Update: &store.StatusUpdate{Stored: stored, Status: map[string]any{
				"phase": "Succeeded", "startedAt": "2026-11-23T03:50:40.043565274Z", "completedAt": "2026-11-23T03:50:40.047076923Z",
				"output": map[string]any{"items": []any{"alpha", "beta"}, "ok": true, "q": 1.0}}},
			Events: []events.Event{ev},
		}
		if _, err := done.Prepare(now); err != nil {
			b.Fatal(err)
		}
	}
}
