package rag_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/warden-dev/warden/app/rag"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// seedChunks writes n chunks of generated text (a vocabulary of 5,000
// words, 40 words a chunk) straight into index "bench" of tenant.
func seedChunks(b *testing.B, st store.Store, tenant string, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%04d", i)
	}
	const perDoc = 50
	// One transaction for everything: the embedded store commits (and
	// syncs) once, not once per document.
	err := st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for d := 0; d < n/perDoc; d++ {
			deltas := map[string]int64{}
			for c := range perDoc {
				words := make([]string, 40)
				for i := range words {
					// Zipf-like: low word numbers are common.
					words[i] = vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
				}
				text := strings.Join(words, " ")
				tf, length := rag.TermFrequencies(text)
				for term := range tf {
					deltas[term]++
				}
				if err := tx.RAGChunkPut(ctx, store.RAGChunk{Namespace: "default", Index: "bench", Source: "gen",
					Document: fmt.Sprint("doc-", d), Ordinal: c, Hash: fmt.Sprint(d, "-", c), Text: text,
					End: len(text), Length: length, Terms: tf}); err != nil {
					return err
				}
			}
			if err := tx.RAGDocumentPut(ctx, store.RAGDocument{Namespace: "default", Index: "bench", Source: "gen",
				Document: fmt.Sprint("doc-", d), Hash: fmt.Sprint(d), Chunks: perDoc}); err != nil {
				return err
			}
			if err := tx.RAGTermAdjust(ctx, "default", "bench", deltas); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// bench holds the one seeded store of the benchmarks: Go runs each
// benchmark function several times (b.N = 1 first), and seeding 10,000
// chunks costs far more than what is measured.
var bench struct {
	once sync.Once
	dir  string
	st   store.Store
	err  error
}

func benchStore(b *testing.B) store.Store {
	bench.once.Do(func() {
		if bench.dir, bench.err = os.MkdirTemp("", "rag-bench-"); bench.err != nil {
			return
		}
		if bench.st, bench.err = backend.Open(context.Background(), "sqlite://"+bench.dir+"/bench.db", backend.Options{}); bench.err != nil {
			return
		}
		seedChunks(b, bench.st, tenantA, 10000)
		bench.err = bench.st.Update(context.Background(), tenantA, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.ResourceCreate(ctx, index("bench", "gen"))
			return err
		})
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.st
}

// TestMain removes the benchmarks' store.
func TestMain(m *testing.M) {
	code := m.Run()
	if bench.st != nil {
		_ = bench.st.Close()
	}
	if bench.dir != "" {
		_ = os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// BenchmarkRetrieve10k is one BM25 retrieval (top 5, three-term query) over
// an index of 10,000 chunks on the embedded store, the KnowledgeRetrieved
// event included (docs/performance.md).
func BenchmarkRetrieve10k(b *testing.B) {
	st := benchStore(b)
	svc, err := rag.New(rag.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	req := rag.RetrieveRequest{Index: "bench", Query: "w0042 w1234 w3000", TopK: 5}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := svc.Retrieve(context.Background(), tenantA, "default", req, rag.Caller{Subject: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Results) != 5 {
			b.Fatalf("%d results", len(out.Results))
		}
	}
}

// BenchmarkRankBM25 is the ranking alone, from the postings of the
// query's terms in the same 10,000 chunks.
func BenchmarkRankBM25(b *testing.B) {
	st := benchStore(b)
	var err error
	var postings []store.RAGPosting
	var stats store.RAGStats
	terms := []string{"w0042", "w1234", "w3000"}
	if err := st.View(context.Background(), tenantA, func(ctx context.Context, r store.Reader) error {
		if postings, err = r.RAGPostingList(ctx, store.RAGPostingQuery{Namespace: "default", Index: "bench", Terms: terms}); err != nil {
			return err
		}
		stats, err = r.RAGTermStats(ctx, "default", "bench", terms)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if len(rag.RankBM25(postings, terms, stats)) == 0 {
			b.Fatal("no match")
		}
	}
}
