package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/storetest"
)

// benchItems is the memory size docs/performance.md reports.
const benchItems = 10000

// benchMemory fills Memory "bench" (namespace scope, cap above benchItems)
// with benchItems items of 20 words from a 2,000-word vocabulary (Zipf
// distributed, as words in text are) and returns an admin principal.
func benchMemory(b *testing.B) (*harness, auth.Principal) {
	h := newHarness(b, openSQLite(b), memory.Config{})
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 1999)
	now := h.clock.Now()
	require.NoError(b, h.st.Update(context.Background(), h.tenant, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.ResourceCreate(ctx, storetest.NewObject(resource.KindMemory, "default", "bench", nil,
			map[string]any{"scope": "namespace", "maxItems": int64(2 * benchItems)})); err != nil {
			return err
		}
		for i := range benchItems {
			words := make([]string, 20)
			for j := range words {
				words[j] = fmt.Sprintf("w%d", zipf.Uint64())
			}
			if _, err := tx.MemoryItemInsert(ctx, store.MemoryItem{ID: fmt.Sprintf("i%05d", i), Namespace: "default", Memory: "bench",
				Text: strings.Join(words, " "), Metadata: map[string]any{"shard": float64(i % 10)},
				CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}); err != nil {
				return err
			}
		}
		return nil
	}))
	return h, auth.Principal{Tenant: h.tenant, Subject: "apikey:admin", Role: auth.RoleAdmin, Namespace: "default", Kind: auth.KindAPIKey}
}

// BenchmarkQuery10k is one query of a memory of 10,000 items through the
// service (store read, BM25 ranking, the MemoryRead event).
func BenchmarkQuery10k(b *testing.B) {
	h, p := benchMemory(b)
	cases := []struct {
		name string
		body string
	}{
		{"text", `{"text":"w3 w250 w1500","limit":10}`},
		{"text+filter", `{"text":"w3 w250 w1500","metadata":{"shard":3},"limit":10}`},
		{"recent", `{"limit":10}`},
	}
	for _, c := range cases {
		req, err := memory.ParseQueryRequest([]byte(c.body), "bench")
		require.NoError(b, err)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.svc.Query(context.Background(), p, "default", req)
				if err != nil || res.Count == 0 {
					b.Fatalf("query: %v, %d items", err, res.Count)
				}
			}
		})
	}
}
