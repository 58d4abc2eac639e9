package storetest

import (
	"context"
	"fmt"
	"testing"

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
