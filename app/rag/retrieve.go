package rag

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/scan"
	"github.com/warden-dev/warden/app/store"
)

// BM25 parameters (the usual Lucene defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Retrieval limits.
const (
	// MaxTopK bounds a request's topK.
	MaxTopK = 100
	// MaxQueryTerms bounds the distinct terms of a query that are scored.
	MaxQueryTerms = 64
)

// Ranking names.
const (
	RankingBM25   = "bm25"
	RankingCosine = "cosine"
)

// DefaultScanInjection is the injection mode of an index that names none:
// retrieved text is third-party content.
const DefaultScanInjection = scan.ModeRedact

// Citation says where a chunk comes from.
type Citation struct {
	Source   string `json:"source"`
	Document string `json:"document"`
	URI      string `json:"uri,omitempty"`
	Title    string `json:"title,omitempty"`
	// Chunk is the chunk's ordinal in its document; Start and End its
	// rune offsets there.
	Chunk int    `json:"chunk"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Hash  string `json:"hash"`
}

// InjectionFinding is one prompt-injection finding in a chunk, without the
// matched text.
type InjectionFinding struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
}

// Injection reports what the scan found in a chunk and did about it.
type Injection struct {
	Findings []InjectionFinding `json:"findings"`
	// Action is flagged (text unchanged) or redacted.
	Action string `json:"action"`
}

// Result is one retrieved chunk.
type Result struct {
	Text     string            `json:"text"`
	Score    float64           `json:"score"`
	Source   string            `json:"source"`
	Citation Citation          `json:"citation"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Injection is set when the scan found something in the chunk.
	Injection *Injection `json:"injection,omitempty"`
}

// RetrieveResponse is the answer of a retrieval.
type RetrieveResponse struct {
	Index     string   `json:"index"`
	Namespace string   `json:"namespace"`
	Ranking   string   `json:"ranking"`
	Results   []Result `json:"results"`
	// Withheld counts chunks the scan blocked (scanInjection: block).
	Withheld int `json:"withheld,omitempty"`
}

// Caller identifies who retrieves, for the KnowledgeRetrieved event.
type Caller struct {
	Subject string
	Agent   string
}

type candidate struct {
	c     *store.RAGChunk
	score float64
}

// Retrieve answers the top-k chunks of an index for req.Query.
func (s *Service) Retrieve(ctx context.Context, tenant, namespace string, req RetrieveRequest, caller Caller) (*RetrieveResponse, error) {
	var (
		spec   resource.RAGIndexSpec
		chunks []store.RAGChunk
		stats  store.RAGStats
		docs   map[docKey]store.RAGDocument
	)
	terms := queryTerms(req.Query)
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if spec, err = getIndex(ctx, r, namespace, req.Index); err != nil {
			return err
		}
		if chunks, err = r.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: namespace, Index: req.Index, Sources: req.Filter.Sources}); err != nil {
			return err
		}
		if stats, err = r.RAGTermStats(ctx, namespace, req.Index, terms); err != nil {
			return err
		}
		ds, err := r.RAGDocumentList(ctx, namespace, req.Index)
		docs = make(map[docKey]store.RAGDocument, len(ds))
		for _, d := range ds {
			docs[docKey{d.Source, d.Document}] = d
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	topK := req.TopK
	if topK == 0 {
		topK = int(spec.TopK)
	}
	if topK <= 0 {
		topK = 5
	}
	topK = min(topK, MaxTopK)
	mode, err := scan.ParseMode(spec.ScanInjection)
	if err != nil || spec.ScanInjection == "" {
		mode = DefaultScanInjection
	}
	if err != nil {
		s.log.WarnContext(ctx, "RAG index with an unknown scanInjection; using the default", "index", req.Index, "scanInjection", spec.ScanInjection)
	}

	filtered := chunks[:0]
	for _, c := range chunks {
		if matches(c.Metadata, req.Filter.Metadata) {
			filtered = append(filtered, c)
		}
	}
	ranking := RankingBM25
	var cands []candidate
	if model := s.embeddingModel(spec); model != "" && allEmbedded(filtered) && len(filtered) > 0 {
		vs, err := s.cfg.Embedder.Embed(ctx, model, []string{req.Query})
		if err != nil {
			s.log.WarnContext(ctx, "RAG query embedding failed; ranking with BM25", "index", req.Index, "err", err)
		} else {
			ranking = RankingCosine
			cands = rankCosine(filtered, vs[0])
		}
	}
	if ranking == RankingBM25 {
		cands = RankBM25(filtered, terms, stats)
	}
	out := &RetrieveResponse{Index: req.Index, Namespace: namespace, Ranking: ranking, Results: []Result{}}
	flagged := 0
	for _, cand := range cands {
		if len(out.Results) >= topK {
			break
		}
		c := cand.c
		text, findings, blocked := scan.ApplyInjection(c.Text, mode)
		if blocked {
			out.Withheld++
			flagged++
			continue
		}
		d := docs[docKey{c.Source, c.Document}]
		r := Result{Text: text, Score: round(cand.score), Source: c.Source, Metadata: c.Metadata,
			Citation: Citation{Source: c.Source, Document: c.Document, URI: d.URI, Title: d.Title,
				Chunk: c.Ordinal, Start: c.Start, End: c.End, Hash: c.Hash}}
		if len(findings) > 0 {
			flagged++
			inj := &Injection{Action: "flagged"}
			if text != c.Text {
				inj.Action = "redacted"
			}
			for _, f := range findings {
				inj.Findings = append(inj.Findings, InjectionFinding{Kind: string(f.Kind), Severity: f.Severity.String()})
			}
			r.Injection = inj
		}
		out.Results = append(out.Results, r)
	}
	if err := s.recordRetrieval(ctx, tenant, namespace, req, caller, out, flagged); err != nil {
		return nil, err
	}
	return out, nil
}

// recordRetrieval persists and publishes KnowledgeRetrieved. The event
// names the chunks returned and the query's size, never its text.
func (s *Service) recordRetrieval(ctx context.Context, tenant, namespace string, req RetrieveRequest, caller Caller, out *RetrieveResponse, flagged int) error {
	refs := make([]any, len(out.Results))
	for i, r := range out.Results {
		refs[i] = fmt.Sprintf("%s/%s#%d", r.Citation.Source, r.Citation.Document, r.Citation.Chunk)
	}
	data := map[string]any{
		"index": req.Index, "ranking": out.Ranking, "results": len(out.Results), "chunks": refs,
		"queryBytes": len(req.Query), "flagged": flagged, "withheld": out.Withheld, "subject": caller.Subject,
	}
	if caller.Agent != "" {
		data["agent"] = caller.Agent
	}
	var ev events.Event
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		ev, err = tx.EventInsert(ctx, events.Event{Type: events.KnowledgeRetrieved, Time: s.cfg.Now().UTC(), Tenant: tenant,
			Namespace: namespace, Subject: resource.KindRAGIndex + "/" + req.Index, Data: data})
		return err
	})
	if err != nil {
		return fmt.Errorf("rag: record %s: %w", events.KnowledgeRetrieved, err)
	}
	if s.cfg.Bus != nil {
		s.cfg.Bus.Publish(ev)
	}
	return nil
}

func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// queryTerms returns the distinct terms of a query, at most MaxQueryTerms.
func queryTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Terms(q) {
		if !seen[t] && len(out) < MaxQueryTerms {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func allEmbedded(cs []store.RAGChunk) bool {
	for _, c := range cs {
		if c.Embedding == nil {
			return false
		}
	}
	return true
}

// RankBM25 scores chunks against the query terms with BM25, using the
// index-wide statistics, and returns those that match at least one term,
// best first (ties in document order).
func RankBM25(chunks []store.RAGChunk, terms []string, stats store.RAGStats) []candidate {
	if len(terms) == 0 || stats.Chunks == 0 {
		return nil
	}
	n := float64(stats.Chunks)
	avg := float64(stats.TotalLength) / n
	if avg <= 0 {
		avg = 1
	}
	idf := make([]float64, len(terms))
	for i, t := range terms {
		df := float64(stats.DF[t])
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	var out []candidate
	for i := range chunks {
		c := &chunks[i]
		score := 0.0
		norm := bm25K1 * (1 - bm25B + bm25B*float64(c.Length)/avg)
		for j, t := range terms {
			tf := float64(c.Terms[t])
			if tf == 0 {
				continue
			}
			score += idf[j] * tf * (bm25K1 + 1) / (tf + norm)
		}
		if score > 0 {
			out = append(out, candidate{c: c, score: score})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].score > out[b].score })
	return out
}

func rankCosine(chunks []store.RAGChunk, q []float32) []candidate {
	out := make([]candidate, len(chunks))
	for i := range chunks {
		out[i] = candidate{c: &chunks[i], score: Cosine(chunks[i].Embedding, q)}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].score > out[b].score })
	return out
}
