package storetest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// BenchOpenFunc opens a store for a benchmark.
type BenchOpenFunc func(b *testing.B) store.Store

// BenchmarkList lists 10,000 resources page by page (limit 500). One
// iteration is the whole walk of 20 pages.
func BenchmarkList(b *testing.B, open BenchOpenFunc) {
	s := open(b)
	tenant := NewTenant()
	const total = 10000
	for start := 0; start < total; start += 1000 {
		objs := make([]*resource.Object, 0, 1000)
		for i := start; i < start+1000; i++ {
			objs = append(objs, benchObject(fmt.Sprintf("ns-%d", i%4), i))
		}
		create(b, s, tenant, objs...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		p := store.ListParams{Kind: "Agent", Limit: 500}
		for {
			res, err := list(b, s, tenant, p)
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Items)
			if res.Continue == "" {
				break
			}
			p.Continue = res.Continue
		}
		if n != total {
			b.Fatalf("listed %d resources, want %d", n, total)
		}
	}
}

// BenchmarkCreate creates 1,000 resources in one Update. One iteration is
// the whole transaction.
func BenchmarkCreate(b *testing.B, open BenchOpenFunc) {
	s := open(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		tenant := NewTenant()
		objs := make([]*resource.Object, 1000)
		for i := range objs {
			objs[i] = benchObject("default", i)
		}
		b.StartTimer()
		err := s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
			for _, o := range objs {
				if _, err := tx.ResourceCreate(ctx, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchParallelism is the number of goroutines per GOMAXPROCS of the
// parallel gateway benchmarks: several gateway calls in flight at once.
const benchParallelism = 4

// BenchmarkIdempotencyClaim claims a fresh key in an Update of its own, as
// the gateway does once per side-effecting call. One iteration is one
// transaction; "serial" runs one at a time, "parallel" many at once.
func BenchmarkIdempotencyClaim(b *testing.B, open BenchOpenFunc) {
	s := open(b)
	tenant := NewTenant()
	now := time.Now()
	var seq atomic.Int64
	claimOnce := func() error {
		i := strconv.FormatInt(seq.Add(1), 10)
		c := store.IdempotencyClaim{Namespace: "default", Key: "key-" + i, Call: "call-" + i, Now: now, Window: time.Hour}
		return s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
			holder, err := tx.IdempotencyClaim(ctx, c)
			if err == nil && holder != "" {
				err = fmt.Errorf("key %s is held by %s", c.Key, holder)
			}
			return err
		})
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := claimOnce(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := claimOnce(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkUsageCharge charges three capped counters of one window (a
// tool's rate, an agent's budget and the tenant's budget) in an Update of
// its own, as the gateway does per call. One iteration is one transaction;
// "serial" runs one at a time, "parallel" many at once, each goroutine with
// a tool and agent of its own but all sharing the tenant's counter, whose
// row lock they queue on.
func BenchmarkUsageCharge(b *testing.B, open BenchOpenFunc) {
	s := open(b)
	tenant := NewTenant()
	window := time.Now().Truncate(time.Minute)
	var seq atomic.Int64
	chargesOf := func() []store.UsageCharge {
		const unlimited = 1 << 60
		i := strconv.FormatInt(seq.Add(1), 10)
		return []store.UsageCharge{
			{UsageKey: store.UsageKey{Key: "tool:default/crm-" + i, WindowStart: window}, Calls: 1, MaxCalls: unlimited},
			{UsageKey: store.UsageKey{Key: "agent:default/support-" + i, WindowStart: window}, Calls: 1, Cost: 0.01, MaxCost: unlimited},
			{UsageKey: store.UsageKey{Key: "tenant", WindowStart: window}, Calls: 1, Cost: 0.01, MaxCost: unlimited},
		}
	}
	chargeOnce := func(charges []store.UsageCharge) error {
		return s.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
			_, exceeded, err := tx.UsageCharge(ctx, charges)
			if err == nil && exceeded >= 0 {
				err = fmt.Errorf("charge %d refused", exceeded)
			}
			return err
		})
	}
	b.Run("serial", func(b *testing.B) {
		charges := chargesOf()
		b.ReportAllocs()
		for b.Loop() {
			if err := chargeOnce(charges); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			charges := chargesOf()
			for pb.Next() {
				if err := chargeOnce(charges); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func benchObject(ns string, i int) *resource.Object {
	return NewObject("Agent", ns, fmt.Sprintf("agent-%05d", i),
		map[string]string{"app": "bench", "shard": fmt.Sprint(i % 10)},
		map[string]any{
			"model":        "gpt-x",
			"instructions": "You are a helpful agent that answers billing questions.",
			"tools":        []any{"crm.lookup", "billing.refund"},
			"replicas":     i % 3,
		})
}

// BenchmarkWriteCalls writes batches of 16 tool calls as the gateway's
// step 5 does (claim, ToolCall record, event), durably, then their
// results (status update, release, event) as a second batch. One
// iteration is both batches; ns/op divided by 16 is a call's storage cost
// on the writer when batches are full.
func BenchmarkWriteCalls(b *testing.B, open BenchOpenFunc) {
	s := open(b)
	tenant := NewTenant()
	ctx := context.Background()
	const batch = 16
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		records := make([]*store.CallWrite, batch)
		for i := range records {
			n++
			records[i] = callRecord("tc-"+strconv.Itoa(n), "k-"+strconv.Itoa(n), time.Now())
		}
		if err := s.WriteCalls(ctx, tenant, records, true); err != nil {
			b.Fatal(err)
		}
		results := make([]*store.CallWrite, batch)
		for i, r := range records {
			results[i] = callFinish(r.Created[0], "Succeeded", false)
		}
		if err := s.WriteCalls(ctx, tenant, results, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteCall writes one call at a time, as the gateway does at a
// moderate rate: its record, then its result, each a batch of one. The
// result's commit is always durable; the record's is too in "durable", and
// in "committed" it does not wait to be (a read-only call).
func BenchmarkWriteCall(b *testing.B, open BenchOpenFunc) {
	for _, mode := range []string{"durable", "committed"} {
		b.Run(mode, func(b *testing.B) {
			s := open(b)
			tenant := NewTenant()
			ctx := context.Background()
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				n++
				record := callRecord("tc-"+strconv.Itoa(n), "k-"+strconv.Itoa(n), time.Now())
				if err := s.WriteCalls(ctx, tenant, []*store.CallWrite{record}, mode == "durable"); err != nil {
					b.Fatal(err)
				}
				result := callFinish(record.Created[0], "Succeeded", false)
				if err := s.WriteCalls(ctx, tenant, []*store.CallWrite{result}, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
