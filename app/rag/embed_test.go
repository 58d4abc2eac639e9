package rag_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/rag"
)

// embeddingServer speaks the OpenAI embeddings wire format with a toy
// model: a text's vector counts the words of three topics, so texts about
// one topic are close whatever their exact words.
func embeddingServer(t *testing.T, calls *atomic.Int64, inputs *atomic.Int64) *httptest.Server {
	topics := [][]string{{"money", "refund", "refunds", "reimbursed", "paid"}, {"parcel", "shipping", "delivery", "courier"}, {"broken", "warranty", "defect", "repair"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "embedder" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		inputs.Add(int64(len(req.Input)))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, in := range req.Input {
			v := make([]float32, len(topics)+1)
			v[len(topics)] = 0.01
			for _, w := range strings.Fields(strings.ToLower(in)) {
				w = strings.Trim(w, ".,?!")
				for ti, words := range topics {
					for _, tw := range words {
						if w == tw {
							v[ti]++
						}
					}
				}
			}
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEmbeddingsRankByCosine(t *testing.T) {
	t.Parallel()
	var calls, inputs atomic.Int64
	srv := embeddingServer(t, &calls, &inputs)
	b := setup(t, "", func(c *rag.Config) { c.Embedder = &rag.Embedder{URL: srv.URL} })
	idx := index("help", "faq")
	idx.Spec["embedding"] = map[string]any{"modelRef": "embedder"}
	b.apply(tenantA, idx, inline("faq",
		doc("refunds", "You get your money back: refunds are paid within 14 days."),
		doc("shipping", "Every parcel goes by courier; delivery takes two days."),
		doc("warranty", "A broken device is covered: the warranty pays the repair.")))
	refresh(t, b, tenantA, "help")
	require.EqualValues(t, 3, inputs.Load(), "one vector per chunk")

	// No query word appears in the refunds document, yet it ranks first.
	out := retrieve(t, b, tenantA, rag.RetrieveRequest{Index: "help", Query: "when am I reimbursed"})
	require.Equal(t, rag.RankingCosine, out.Ranking)
	require.Equal(t, "refunds", out.Results[0].Citation.Document)

	// An unchanged refresh embeds nothing; a changed document only its
	// new chunk.
	refresh(t, b, tenantA, "help")
	require.EqualValues(t, 3+1, inputs.Load(), "3 chunks, then only the query")
	b.apply(tenantA, inline("faq",
		doc("refunds", "You get your money back: refunds are paid within 14 days."),
		doc("shipping", "Every parcel goes by courier; delivery takes three days."),
		doc("warranty", "A broken device is covered: the warranty pays the repair.")))
	refresh(t, b, tenantA, "help")
	require.EqualValues(t, 3+1+1, inputs.Load())

	// Without an embedder the same index ranks with BM25.
	plain := setup(t, "")
	plain.apply(tenantA, idx, inline("faq", doc("refunds", "refunds are paid")))
	refresh(t, plain, tenantA, "help")
	require.Equal(t, rag.RankingBM25, retrieve(t, plain, tenantA, rag.RetrieveRequest{Index: "help", Query: "refunds"}).Ranking)
}
