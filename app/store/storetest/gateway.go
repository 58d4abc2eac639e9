package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// claim runs one idempotency claim in an Update of its own.
func claim(t testing.TB, s store.Store, tenant string, c store.IdempotencyClaim) string {
	t.Helper()
	var holder string
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		holder, err = tx.IdempotencyClaim(ctx, c)
		return err
	}))
	return holder
}

func release(t testing.TB, s store.Store, tenant, namespace, key, call string) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		return tx.IdempotencyRelease(ctx, namespace, key, call)
	}))
}

// charge runs one UsageCharge in an Update of its own.
func charge(t testing.TB, s store.Store, tenant string, charges ...store.UsageCharge) ([]store.UsageTotal, int) {
	t.Helper()
	var totals []store.UsageTotal
	var exceeded int
	require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		totals, exceeded, err = tx.UsageCharge(ctx, charges)
		return err
	}))
	return totals, exceeded
}

// usage reads counters in a View.
func usage(t testing.TB, s store.Store, tenant string, keys ...store.UsageKey) []store.UsageTotal {
	t.Helper()
	var out []store.UsageTotal
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.UsageGet(ctx, keys)
		return err
	}))
	return out
}

// window is the window start the gateway tests charge in.
var window = time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)

// usageCharge charges calls and cost to key in window, with caps.
func usageCharge(key string, calls int64, cost float64, maxCalls int64, maxCost float64) store.UsageCharge {
	return store.UsageCharge{UsageKey: store.UsageKey{Key: key, WindowStart: window},
		Calls: calls, Cost: cost, MaxCalls: maxCalls, MaxCost: maxCost}
}

func usageKeys(keys ...string) []store.UsageKey {
	out := make([]store.UsageKey, len(keys))
	for i, k := range keys {
		out[i] = store.UsageKey{Key: k, WindowStart: window}
	}
	return out
}

// testIdempotencyClaim walks one key through the claim lifecycle: taken,
// held, held for the whole window, expired, forced, released.
func testIdempotencyClaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	// Nanoseconds, which the drivers store as microseconds.
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	at := func(call string, d time.Duration) store.IdempotencyClaim {
		return store.IdempotencyClaim{Namespace: "default", Key: "k1", Call: call, Now: t0.Add(d), Window: time.Hour}
	}

	require.Empty(t, claim(t, s, tenant, at("call-1", 0)), "a new key is taken")
	require.Equal(t, "call-1", claim(t, s, tenant, at("call-2", time.Minute)), "a held key names its holder")
	require.Equal(t, "call-1", claim(t, s, tenant, at("call-1", time.Minute)), "the holder claiming again is told it holds the key")
	require.Equal(t, "call-1", claim(t, s, tenant, at("call-3", time.Hour-time.Microsecond)), "a claim blocks for its whole window")
	require.Equal(t, "call-1", claim(t, s, tenant, at("call-3", -time.Hour)), "a clock behind the claim does not expire it")
	require.Empty(t, claim(t, s, tenant, at("call-2", time.Hour)), "a claim as old as the window has expired")
	require.Equal(t, "call-2", claim(t, s, tenant, at("call-3", time.Hour+time.Minute)), "the expired claim was taken over")

	forced := at("call-3", time.Hour+2*time.Minute)
	forced.Force = true
	require.Empty(t, claim(t, s, tenant, forced), "force takes a held claim")
	require.Equal(t, "call-3", claim(t, s, tenant, at("call-4", time.Hour+3*time.Minute)))

	release(t, s, tenant, "default", "k1", "call-2")
	require.Equal(t, "call-3", claim(t, s, tenant, at("call-4", time.Hour+4*time.Minute)), "a former holder's release changes nothing")
	release(t, s, tenant, "default", "k1", "call-3")
	require.Empty(t, claim(t, s, tenant, at("call-4", time.Hour+5*time.Minute)), "a released claim is taken")
	require.Equal(t, "call-4", claim(t, s, tenant, at("call-5", time.Hour+6*time.Minute)), "the new claim holds from its own time")
	release(t, s, tenant, "default", "k1", "call-3")
	release(t, s, tenant, "default", "never-claimed", "call-1")
	require.Equal(t, "call-4", claim(t, s, tenant, at("call-5", time.Hour+7*time.Minute)), "stale releases are harmless")

	other := at("call-9", time.Hour+7*time.Minute)
	other.Namespace = "other"
	require.Empty(t, claim(t, s, tenant, other), "keys are scoped by namespace")

	open := store.IdempotencyClaim{Namespace: "default", Key: "k2", Call: "a", Now: t0}
	require.Empty(t, claim(t, s, tenant, open))
	open.Call = "b"
	require.Empty(t, claim(t, s, tenant, open), "a zero window blocks nothing")

	now := store.IdempotencyClaim{Namespace: "default", Key: "k3", Call: "a", Window: time.Hour}
	require.Empty(t, claim(t, s, tenant, now), "a zero Now is the driver's clock")
	now.Call = "b"
	require.Equal(t, "a", claim(t, s, tenant, now))

	// A rolled-back claim leaves nothing behind.
	err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		holder, err := tx.IdempotencyClaim(ctx, store.IdempotencyClaim{Namespace: "default", Key: "k4", Call: "a", Now: t0, Window: time.Hour})
		require.NoError(t, err)
		require.Empty(t, holder)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Empty(t, claim(t, s, tenant, store.IdempotencyClaim{Namespace: "default", Key: "k4", Call: "b", Now: t0, Window: time.Hour}))

	// Inside one transaction a claim sees the transaction's own claims and
	// releases.
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		c := store.IdempotencyClaim{Namespace: "default", Key: "k5", Call: "x", Now: t0, Window: time.Hour}
		holder, err := tx.IdempotencyClaim(ctx, c)
		require.NoError(t, err)
		require.Empty(t, holder)
		c.Call = "y"
		holder, err = tx.IdempotencyClaim(ctx, c)
		require.NoError(t, err)
		require.Equal(t, "x", holder)
		require.NoError(t, tx.IdempotencyRelease(ctx, "default", "k5", "x"))
		holder, err = tx.IdempotencyClaim(ctx, c)
		require.NoError(t, err)
		require.Empty(t, holder)
		return nil
	}))

	for _, tc := range []struct {
		name string
		c    store.IdempotencyClaim
	}{
		{"no key", store.IdempotencyClaim{Namespace: "default", Call: "a", Now: t0}},
		{"no call", store.IdempotencyClaim{Namespace: "default", Key: "k", Now: t0}},
		{"negative window", store.IdempotencyClaim{Namespace: "default", Key: "k", Call: "a", Now: t0, Window: -time.Second}},
	} {
		err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.IdempotencyClaim(ctx, tc.c)
			return err
		})
		require.Error(t, err, tc.name)
	}

	require.Zero(t, version(t, s, tenant), "claims are not resource writes")
}

// holderOf reads the holder that would stop c, in a View.
func holderOf(t testing.TB, s store.Store, tenant string, c store.IdempotencyClaim) string {
	t.Helper()
	var holder string
	require.NoError(t, s.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		holder, err = r.IdempotencyHolder(ctx, c)
		return err
	}))
	alone, err := s.ClaimHolder(context.Background(), tenant, c)
	require.NoError(t, err)
	require.Equal(t, holder, alone, "ClaimHolder reads what IdempotencyHolder reads")
	return holder
}

// testIdempotencyHolder: the read of a claim answers what a claim would,
// through the lifecycle, and changes nothing.
func testIdempotencyHolder(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	at := func(call string, d time.Duration) store.IdempotencyClaim {
		return store.IdempotencyClaim{Namespace: "default", Key: "k1", Call: call, Now: t0.Add(d), Window: time.Hour}
	}

	require.Empty(t, holderOf(t, s, tenant, at("call-1", 0)), "an unclaimed key has no holder")
	require.Empty(t, holderOf(t, s, tenant, at("call-1", 0)), "reading does not claim")
	require.Empty(t, claim(t, s, tenant, at("call-1", 0)))
	require.Equal(t, "call-1", holderOf(t, s, tenant, at("call-2", time.Minute)), "a held key names its holder")
	require.Equal(t, "call-1", holderOf(t, s, tenant, at("call-2", time.Hour-time.Microsecond)), "a claim blocks for its whole window")
	require.Equal(t, "call-1", holderOf(t, s, tenant, at("call-2", -time.Hour)), "a clock behind the claim does not expire it")
	require.Empty(t, holderOf(t, s, tenant, at("call-2", time.Hour)), "a claim as old as the window has expired")
	forced := at("call-2", time.Minute)
	forced.Force = true
	require.Empty(t, holderOf(t, s, tenant, forced), "force is stopped by no claim")
	other := at("call-2", time.Minute)
	other.Namespace = "other"
	require.Empty(t, holderOf(t, s, tenant, other), "keys are scoped by namespace")
	require.Empty(t, holderOf(t, s, NewTenant(), at("call-2", time.Minute)), "keys are scoped by tenant")

	release(t, s, tenant, "default", "k1", "call-1")
	require.Empty(t, holderOf(t, s, tenant, at("call-2", 2*time.Minute)), "a released claim stops nobody")
	require.Empty(t, claim(t, s, tenant, at("call-2", 2*time.Minute)))
	require.Equal(t, "call-2", holderOf(t, s, tenant, at("call-3", 3*time.Minute)), "the new claim holds from its own time")

	// Inside a transaction the read sees the transaction's own claim.
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		c := store.IdempotencyClaim{Namespace: "default", Key: "k2", Call: "x", Now: t0, Window: time.Hour}
		holder, err := tx.IdempotencyClaim(ctx, c)
		require.NoError(t, err)
		require.Empty(t, holder)
		c.Call = "y"
		holder, err = tx.IdempotencyHolder(ctx, c)
		require.NoError(t, err)
		require.Equal(t, "x", holder)
		return nil
	}))

	err := s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		_, err := r.IdempotencyHolder(ctx, store.IdempotencyClaim{Namespace: "default", Call: "a", Now: t0})
		return err
	})
	require.Error(t, err, "a key is required")
	_, err = s.ClaimHolder(ctx, tenant, store.IdempotencyClaim{Namespace: "default", Call: "a", Now: t0})
	require.Error(t, err, "a key is required")
	_, err = s.ClaimHolder(ctx, "", store.IdempotencyClaim{Namespace: "default", Key: "k1", Call: "a", Now: t0})
	require.ErrorIs(t, err, store.ErrNoTenant)
}

// testIdempotencyConcurrent: many transactions claiming one key at once
// (really at once on a shared backend) elect exactly one holder.
func testIdempotencyConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	now := time.Now()
	const n = 50
	holders := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
				var err error
				holders[i], err = tx.IdempotencyClaim(ctx, store.IdempotencyClaim{
					Namespace: "default", Key: "once", Call: fmt.Sprint("call-", i), Now: now, Window: time.Hour})
				return err
			})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		require.NoError(t, errs[i], "claim %d", i)
		if holders[i] == "" {
			require.Equal(t, -1, winner, "calls %d and %d both took the key", winner, i)
			winner = i
		}
	}
	require.NotEqual(t, -1, winner, "nobody took the key")
	for i := range n {
		if i != winner {
			require.Equal(t, fmt.Sprint("call-", winner), holders[i], "claim %d names the winner", i)
		}
	}
}

// testUsageCharge covers caps, all-or-none charging and the totals.
func testUsageCharge(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	type totals = []store.UsageTotal
	// Costs are binary fractions, so sums are exact in every driver.

	require.Equal(t, totals{{}, {}}, usage(t, s, tenant, usageKeys("a", "b")...), "counters never charged read zero")
	require.Empty(t, usage(t, s, tenant))

	got, exceeded := charge(t, s, tenant, usageCharge("a", 1, 0.5, 0, 0))
	require.Equal(t, -1, exceeded)
	require.Equal(t, totals{{Calls: 1, Cost: 0.5}}, got)
	got, exceeded = charge(t, s, tenant, usageCharge("a", 2, 0.25, 0, 0))
	require.Equal(t, -1, exceeded, "zero caps are no caps")
	require.Equal(t, totals{{Calls: 3, Cost: 0.75}}, got)

	steps := []struct {
		name     string
		charge   store.UsageCharge
		exceeded int
		want     store.UsageTotal
	}{
		{"below the calls cap", usageCharge("calls", 2, 0, 3, 0), -1, store.UsageTotal{Calls: 2}},
		{"up to the calls cap", usageCharge("calls", 1, 0, 3, 0), -1, store.UsageTotal{Calls: 3}},
		{"past the calls cap", usageCharge("calls", 1, 0, 3, 0), 0, store.UsageTotal{Calls: 3}},
		{"a zero charge at the cap", usageCharge("calls", 0, 0, 3, 0), -1, store.UsageTotal{Calls: 3}},
		{"below the cost cap", usageCharge("cost", 1, 1.5, 0, 2), -1, store.UsageTotal{Calls: 1, Cost: 1.5}},
		{"past the cost cap", usageCharge("cost", 1, 0.75, 0, 2), 0, store.UsageTotal{Calls: 1, Cost: 1.5}},
		{"up to the cost cap", usageCharge("cost", 1, 0.5, 0, 2), -1, store.UsageTotal{Calls: 2, Cost: 2}},
		{"alone past the calls cap", usageCharge("alone", 5, 0, 3, 0), 0, store.UsageTotal{}},
		{"alone past the cost cap", usageCharge("alone", 1, 3, 0, 2), 0, store.UsageTotal{}},
		{"a cap that already passed", usageCharge("a", 1, 0, 2, 0), 0, store.UsageTotal{Calls: 3, Cost: 0.75}},
	}
	for _, st := range steps {
		got, exceeded := charge(t, s, tenant, st.charge)
		require.Equal(t, st.exceeded, exceeded, st.name)
		require.Equal(t, totals{st.want}, got, st.name)
		require.Equal(t, totals{st.want}, usage(t, s, tenant, st.charge.UsageKey), st.name)
	}

	tests := []struct {
		name     string
		charges  []store.UsageCharge
		exceeded int
		want     totals
	}{
		{
			name: "a refused charge takes back those before it",
			charges: []store.UsageCharge{usageCharge("a", 1, 0.25, 0, 0), usageCharge("b", 1, 0, 0, 0),
				usageCharge("calls", 1, 0, 3, 0), usageCharge("d", 1, 0, 0, 0)},
			exceeded: 2,
			want:     totals{{Calls: 3, Cost: 0.75}, {}, {Calls: 3}, {}},
		},
		{
			name: "the first refused charge is the exceeded one",
			charges: []store.UsageCharge{usageCharge("b", 1, 0, 0, 0), usageCharge("z", 1, 0, 0, 0),
				usageCharge("cost", 0, 0.5, 0, 2), usageCharge("calls", 1, 0, 3, 0)},
			exceeded: 2,
			want:     totals{{}, {}, {Calls: 2, Cost: 2}, {Calls: 3}},
		},
		{
			name:     "a charge alone past its cap stops the operation",
			charges:  []store.UsageCharge{usageCharge("a", 1, 0, 0, 0), usageCharge("alone", 4, 0, 3, 0), usageCharge("b", 1, 0, 0, 0)},
			exceeded: 1,
			want:     totals{{Calls: 3, Cost: 0.75}, {}, {}},
		},
		{
			name:     "every charge added",
			charges:  []store.UsageCharge{usageCharge("a", 1, 0.25, 10, 10), usageCharge("b", 2, 0.5, 0, 0)},
			exceeded: -1,
			want:     totals{{Calls: 4, Cost: 1}, {Calls: 2, Cost: 0.5}},
		},
		{
			name:     "a counter charged twice reports its final value",
			charges:  []store.UsageCharge{usageCharge("twice", 1, 0, 0, 0), usageCharge("b", 1, 0, 0, 0), usageCharge("twice", 1, 0.5, 0, 0)},
			exceeded: -1,
			want:     totals{{Calls: 2, Cost: 0.5}, {Calls: 3, Cost: 0.5}, {Calls: 2, Cost: 0.5}},
		},
		{
			name:     "the second charge of a counter sees the first",
			charges:  []store.UsageCharge{usageCharge("twice", 1, 0, 3, 0), usageCharge("twice", 1, 0, 3, 0)},
			exceeded: 1,
			want:     totals{{Calls: 2, Cost: 0.5}, {Calls: 2, Cost: 0.5}},
		},
		{
			name:     "no charges",
			exceeded: -1,
			want:     totals{},
		},
	}
	for _, tc := range tests {
		got, exceeded := charge(t, s, tenant, tc.charges...)
		require.Equal(t, tc.exceeded, exceeded, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.want, usage(t, s, tenant, store.UsageKeysOf(tc.charges)...), tc.name)
	}

	// Each window is a counter of its own; window starts are compared as
	// instants, to the microsecond.
	next := store.UsageCharge{UsageKey: store.UsageKey{Key: "calls", WindowStart: window.Add(time.Minute)}, Calls: 1, MaxCalls: 3}
	got, exceeded = charge(t, s, tenant, next)
	require.Equal(t, -1, exceeded)
	require.Equal(t, totals{{Calls: 1}}, got)
	require.Equal(t, totals{{Calls: 3}, {Calls: 3}}, usage(t, s, tenant,
		store.UsageKey{Key: "calls", WindowStart: window.Add(500 * time.Nanosecond)},
		store.UsageKey{Key: "calls", WindowStart: window.In(time.FixedZone("X", 3600))}))

	// A transaction reads its own charges; rolling it back undoes them.
	err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		got, exceeded, err := tx.UsageCharge(ctx, []store.UsageCharge{usageCharge("rolled", 2, 0.5, 0, 0)})
		require.NoError(t, err)
		require.Equal(t, -1, exceeded)
		require.Equal(t, totals{{Calls: 2, Cost: 0.5}}, got)
		read, err := tx.UsageGet(ctx, usageKeys("rolled"))
		require.NoError(t, err)
		require.Equal(t, got, read)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, totals{{}}, usage(t, s, tenant, usageKeys("rolled")...))

	for _, tc := range []struct {
		name   string
		charge store.UsageCharge
	}{
		{"no key", store.UsageCharge{Calls: 1}},
		{"negative calls", usageCharge("bad", -1, 0, 0, 0)},
		{"negative cost", usageCharge("bad", 0, -0.5, 0, 0)},
		{"NaN cost", usageCharge("bad", 0, math.NaN(), 0, 0)},
		{"infinite cost", usageCharge("bad", 0, math.Inf(1), 0, 0)},
		{"negative cap", usageCharge("bad", 1, 0, -1, 0)},
	} {
		err := s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
			_, _, err := tx.UsageCharge(ctx, []store.UsageCharge{usageCharge("a", 1, 0, 0, 0), tc.charge})
			return err
		})
		require.Error(t, err, tc.name)
	}
	require.Equal(t, totals{{Calls: 4, Cost: 1}}, usage(t, s, tenant, usageKeys("a")...), "refused input charged nothing")
	err = s.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		_, err := r.UsageGet(ctx, []store.UsageKey{{}})
		return err
	})
	require.Error(t, err, "a key is required")

	require.Zero(t, version(t, s, tenant), "charges are not resource writes")
}

// testUsageConcurrent: concurrent charges never pass a cap, whatever the
// order in which each transaction names its counters.
func testUsageConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant := NewTenant()
	run := func(n int, charges func(i int) []store.UsageCharge) []int {
		exceeded := make([]int, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
					var err error
					_, exceeded[i], err = tx.UsageCharge(ctx, charges(i))
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "charge %d", i)
		}
		return exceeded
	}

	exceeded := run(40, func(int) []store.UsageCharge {
		return []store.UsageCharge{usageCharge("rate", 1, 0, 25, 0)}
	})
	added := 0
	for _, e := range exceeded {
		if e == -1 {
			added++
		} else {
			require.Equal(t, 0, e)
		}
	}
	require.Equal(t, 25, added)
	require.Equal(t, []store.UsageTotal{{Calls: 25}}, usage(t, s, tenant, usageKeys("rate")...))

	// Half the transactions name the capped counter first, half last.
	exceeded = run(20, func(i int) []store.UsageCharge {
		capped, free := usageCharge("capped", 1, 0.5, 0, 6), usageCharge("free", 1, 0.5, 0, 0)
		if i%2 == 0 {
			return []store.UsageCharge{capped, free}
		}
		return []store.UsageCharge{free, capped}
	})
	added = 0
	for i, e := range exceeded {
		switch {
		case e == -1:
			added++
		case i%2 == 0:
			require.Equal(t, 0, e)
		default:
			require.Equal(t, 1, e)
		}
	}
	require.Equal(t, 12, added)
	require.Equal(t, []store.UsageTotal{{Calls: 12, Cost: 6}, {Calls: 12, Cost: 6}}, usage(t, s, tenant, usageKeys("capped", "free")...),
		"refused transactions took their charge of the free counter back")
}

// testGatewayIsolation: claims and counters are per tenant.
func testGatewayIsolation(t *testing.T, s store.Store) {
	a, b := NewTenant(), NewTenant()
	now := time.Now()
	c := func(call string) store.IdempotencyClaim {
		return store.IdempotencyClaim{Namespace: "default", Key: "k", Call: call, Now: now, Window: time.Hour}
	}
	require.Empty(t, claim(t, s, a, c("a-1")))
	require.Empty(t, claim(t, s, b, c("b-1")), "tenant B does not see A's claim")
	require.Equal(t, "a-1", claim(t, s, a, c("a-2")))
	require.Equal(t, "b-1", claim(t, s, b, c("b-2")))
	release(t, s, b, "default", "k", "a-1")
	require.Equal(t, "a-1", claim(t, s, a, c("a-3")), "B's release does not reach A's claim")

	_, exceeded := charge(t, s, a, usageCharge("rate", 1, 0.5, 1, 0))
	require.Equal(t, -1, exceeded)
	require.Equal(t, []store.UsageTotal{{}}, usage(t, s, b, usageKeys("rate")...), "B does not see A's counter")
	got, exceeded := charge(t, s, b, usageCharge("rate", 1, 0.25, 1, 0))
	require.Equal(t, -1, exceeded, "B's counter is its own")
	require.Equal(t, []store.UsageTotal{{Calls: 1, Cost: 0.25}}, got)
	require.Equal(t, []store.UsageTotal{{Calls: 1, Cost: 0.5}}, usage(t, s, a, usageKeys("rate")...))
}

// testListenConfig: ListenConfig hears commits that wrote a configuration
// resource, through every write path, and nothing else; Listen still
// hears commits that wrote only records.
func testListenConfig(t *testing.T, s store.Store) {
	ctx := context.Background()
	cfg, all := newRecorder(), newRecorder()
	defer s.ListenConfig(cfg.fn)()
	defer s.Listen(all.fn)()

	// Commits that must not reach ListenConfig: records only (create,
	// status update and delete of a ToolCall, an Approval), claims and
	// charges, and a rolled-back configuration write.
	records, quiet, rolledBack := NewTenant(), NewTenant(), NewTenant()
	call := create(t, s, records, NewObject(resource.KindToolCall, "default", "call-1", nil, map[string]any{"tool": "crm.refund"}))[0]
	_, err := update(t, s, records, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		return tx.ResourceUpdateStatus(ctx, call.Key(), map[string]any{"phase": "Succeeded"}, "")
	})
	require.NoError(t, err)
	_, err = update(t, s, records, func(ctx context.Context, tx store.Tx) (*resource.Object, error) {
		if _, err := tx.ResourceCreate(ctx, NewObject(resource.KindApproval, "default", "approval-1", nil, nil)); err != nil {
			return nil, err
		}
		return tx.ResourceDelete(ctx, call.Key(), "")
	})
	require.NoError(t, err)
	claim(t, s, quiet, store.IdempotencyClaim{Namespace: "default", Key: "k", Call: "c", Window: time.Hour})
	charge(t, s, quiet, usageCharge("rate", 1, 0, 0, 0))
	err = s.Update(ctx, rolledBack, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ResourceCreate(ctx, NewObject(resource.KindTool, "default", "t", nil, nil)); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)

	// A configuration commit after them is a fence: once both recorders
	// heard it, and then a second fence (so that the batch of callbacks
	// holding the first has run to its end), every callback the commits
	// above could have caused has run.
	for range 2 {
		fence := NewTenant()
		create(t, s, fence, NewObject(resource.KindTool, "default", "fence", nil, nil))
		cfg.waitFor(t, fence)
		all.waitFor(t, fence)
	}
	require.Positive(t, all.count(records), "Listen hears commits that wrote only records")
	require.Zero(t, cfg.count(records), "ListenConfig ignores commits that wrote only records")
	require.Zero(t, cfg.count(quiet), "claims and charges signal nothing")
	require.Zero(t, all.count(quiet), "claims and charges signal nothing")
	require.Zero(t, cfg.count(rolledBack), "no callback after rollback")

	// Every write path of a configuration kind signals. Each case gets a
	// tenant and a listener of its own, started after the setup. (On a
	// shared backend the setup's own signal may still arrive late through
	// the database, which can only make a case pass early, never fail.)
	tests := []struct {
		name  string
		setup func(ctx context.Context, tx store.Tx) error
		write func(ctx context.Context, tx store.Tx) error
	}{
		{
			name: "create a Tool",
			write: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, NewObject(resource.KindTool, "default", "crm", nil, map[string]any{"v": 1}))
				return err
			},
		},
		{
			name: "update a Policy",
			setup: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, NewObject(resource.KindPolicy, "default", "p", nil, map[string]any{"v": 1}))
				return err
			},
			write: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceUpdate(ctx, NewObject(resource.KindPolicy, "default", "p", nil, map[string]any{"v": 2}))
				return err
			},
		},
		{
			name: "update an Agent's status",
			setup: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, NewObject(resource.KindAgent, "default", "a", nil, nil))
				return err
			},
			write: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceUpdateStatus(ctx, resource.Key{Kind: resource.KindAgent, Namespace: "default", Name: "a"},
					map[string]any{"phase": "Ready"}, "")
				return err
			},
		},
		{
			name: "delete a Tool",
			setup: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceCreate(ctx, NewObject(resource.KindTool, "default", "crm", nil, nil))
				return err
			},
			write: func(ctx context.Context, tx store.Tx) error {
				_, err := tx.ResourceDelete(ctx, resource.Key{Kind: resource.KindTool, Namespace: "default", Name: "crm"}, "")
				return err
			},
		},
		{
			name: "a record and a Model in one commit",
			write: func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.ResourceCreate(ctx, NewObject(resource.KindToolCall, "default", "call-1", nil, nil)); err != nil {
					return err
				}
				_, err := tx.ResourceCreate(ctx, NewObject(resource.KindModel, "default", "m", nil, nil))
				return err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tenant := NewTenant()
			if tc.setup != nil {
				require.NoError(t, s.Update(ctx, tenant, tc.setup))
			}
			rec := newRecorder()
			defer s.ListenConfig(rec.fn)()
			require.NoError(t, s.Update(ctx, tenant, tc.write))
			rec.waitFor(t, tenant)
		})
	}
}

// sweep runs IdempotencySweep chunk after chunk, each in an Update of its
// own, and returns how many claims it deleted and in how many chunks.
func sweep(t testing.TB, s store.Store, tenant string, before time.Time, limit int) (deleted, chunks int) {
	t.Helper()
	for {
		n := 0
		require.NoError(t, s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
			var err error
			n, err = tx.IdempotencySweep(ctx, before, limit)
			return err
		}))
		deleted, chunks = deleted+n, chunks+1
		if n < limit {
			return deleted, chunks
		}
	}
}

// testGatewaySweep deletes the claims and counters older than the horizon
// and nothing else, chunk by chunk, in one tenant only.
func testGatewaySweep(t *testing.T, s store.Store) {
	ctx := context.Background()
	tenant, other := NewTenant(), NewTenant()
	t0 := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		// Claims made before t0: old-0 … old-4, the last one released.
		require.Equal(t, "", claim(t, s, tenant, store.IdempotencyClaim{Namespace: "default", Key: fmt.Sprint("old-", i),
			Call: fmt.Sprint("tc-old-", i), Now: t0.Add(-time.Duration(5-i) * time.Minute), Window: time.Hour}))
	}
	release(t, s, tenant, "default", "old-4", "tc-old-4")
	for _, ns := range []string{"a", "z"} {
		require.Equal(t, "", claim(t, s, tenant, store.IdempotencyClaim{Namespace: ns, Key: "fresh", Call: "tc-fresh-" + ns, Now: t0, Window: time.Hour}))
	}
	require.Equal(t, "", claim(t, s, other, store.IdempotencyClaim{Namespace: "default", Key: "old-0", Call: "tc-other", Now: t0.Add(-time.Hour), Window: 3 * time.Hour}))

	deleted, chunks := sweep(t, s, tenant, t0, 2)
	require.Equal(t, 5, deleted, "the five claims made before t0, released or not")
	require.Equal(t, 3, chunks, "two a chunk")
	deleted, _ = sweep(t, s, tenant, t0, 2)
	require.Zero(t, deleted, "a second sweep finds nothing")
	// The fresh claims still hold; the other tenant's old claim too.
	for _, ns := range []string{"a", "z"} {
		require.Equal(t, "tc-fresh-"+ns, claim(t, s, tenant, store.IdempotencyClaim{Namespace: ns, Key: "fresh", Call: "tc-new", Now: t0, Window: time.Hour}))
	}
	require.Equal(t, "tc-other", claim(t, s, other, store.IdempotencyClaim{Namespace: "default", Key: "old-0", Call: "tc-new", Now: t0, Window: 3 * time.Hour}))

	// Counters of windows that started before the horizon go.
	early := store.UsageCharge{UsageKey: store.UsageKey{Key: "tool:default/t", WindowStart: t0.Add(-2 * time.Hour)}, Calls: 1}
	late := store.UsageCharge{UsageKey: store.UsageKey{Key: "tool:default/t", WindowStart: t0}, Calls: 2}
	charge(t, s, tenant, early, late)
	charge(t, s, other, early)
	var swept int
	require.NoError(t, s.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		swept, err = tx.UsageSweep(ctx, t0.Add(-time.Hour))
		return err
	}))
	require.Equal(t, 1, swept)
	require.Equal(t, []store.UsageTotal{{}, {Calls: 2}}, usage(t, s, tenant, early.UsageKey, late.UsageKey))
	require.Equal(t, []store.UsageTotal{{Calls: 1}}, usage(t, s, other, early.UsageKey))
}
