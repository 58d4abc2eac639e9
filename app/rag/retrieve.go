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

// Scored is a chunk's score for a query.
type Scored struct {
	Key   store.RAGChunkKey
	Score float64
	// chunk is the loaded chunk when the ranking had it already.
	chunk *store.RAGChunk
}

// candidateBatch is how many ranked chunks are loaded at once while
// filling the top k (metadata filters and blocked chunks skip some).
const candidateBatch = 32

// Retrieve answers the top-k chunks of an index for req.Query.
func (s *Service) Retrieve(ctx context.Context, tenant, namespace string, req RetrieveRequest, caller Caller) (*RetrieveResponse, error) {
	var (
		spec  resource.RAGIndexSpec
		stats store.RAGStats
		docs  map[docKey]store.RAGDocument
		cands []Scored
	)
	terms := queryTerms(req.Query)
	ranking := RankingBM25
	var embedded []store.RAGChunk
	model := ""
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if spec, err = getIndex(ctx, r, namespace, req.Index); err != nil {
			return err
		}
		ds, err := r.RAGDocumentList(ctx, namespace, req.Index)
		if err != nil {
			return err
		}
		docs = make(map[docKey]store.RAGDocument, len(ds))
		for _, d := range ds {
			docs[docKey{d.Source, d.Document}] = d
		}
		if model = s.embeddingModel(spec); model != "" {
			embedded, err = r.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: namespace, Index: req.Index, Sources: req.Filter.Sources})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// The query is embedded outside any transaction: a slow embeddings
	// endpoint must not hold a read snapshot open.
	if model != "" && len(embedded) > 0 && allEmbedded(embedded) {
		vs, err := s.cfg.Embedder.Embed(ctx, model, []string{req.Query})
		if err == nil {
			ranking, cands = RankingCosine, rankCosine(embedded, vs[0])
		} else {
			s.log.WarnContext(ctx, "RAG query embedding failed; ranking with BM25", "index", req.Index, "err", err)
		}
	}
	if ranking == RankingBM25 {
		err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			if stats, err = r.RAGTermStats(ctx, namespace, req.Index, terms); err != nil {
				return err
			}
			postings, err := r.RAGPostingList(ctx, store.RAGPostingQuery{Namespace: namespace, Index: req.Index, Terms: terms, Sources: req.Filter.Sources})
			if err != nil {
				return err
			}
			cands = RankBM25(postings, terms, stats)
			return nil
		})
		if err != nil {
			return nil, err
		}
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

	out := &RetrieveResponse{Index: req.Index, Namespace: namespace, Ranking: ranking, Results: []Result{}}
	flagged := 0
	for start := 0; start < len(cands) && len(out.Results) < topK; start += candidateBatch {
		batch := cands[start:min(start+candidateBatch, len(cands))]
		chunks, err := s.load(ctx, tenant, namespace, req.Index, batch)
		if err != nil {
			return nil, err
		}
		for i, c := range chunks {
			if len(out.Results) >= topK {
				break
			}
			if c == nil || !matches(c.Metadata, req.Filter.Metadata) {
				continue
			}
			text, findings, blocked := scan.ApplyInjection(c.Text, mode)
			if blocked {
				out.Withheld++
				flagged++
				continue
			}
			d := docs[docKey{c.Source, c.Document}]
			r := Result{Text: text, Score: round(batch[i].Score), Source: c.Source, Metadata: c.Metadata,
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
	}
	if err := s.recordRetrieval(ctx, tenant, namespace, req, caller, out, flagged); err != nil {
		return nil, err
	}
	return out, nil
}

// load returns the chunks of batch, in order (nil for one deleted since
// it was ranked).
func (s *Service) load(ctx context.Context, tenant, namespace, index string, batch []Scored) ([]*store.RAGChunk, error) {
	out := make([]*store.RAGChunk, len(batch))
	var keys []store.RAGChunkKey
	for i, sc := range batch {
		if sc.chunk != nil {
			out[i] = sc.chunk
			continue
		}
		keys = append(keys, sc.Key)
	}
	if len(keys) == 0 {
		return out, nil
	}
	var got []store.RAGChunk
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		got, err = r.RAGChunkGet(ctx, namespace, index, keys)
		return err
	})
	if err != nil {
		return nil, err
	}
	byKey := make(map[store.RAGChunkKey]*store.RAGChunk, len(got))
	for i := range got {
		byKey[store.RAGChunkKey{Source: got[i].Source, Document: got[i].Document, Ordinal: got[i].Ordinal}] = &got[i]
	}
	for i, sc := range batch {
		if out[i] == nil {
			out[i] = byKey[sc.Key]
		}
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

// RankBM25 scores the chunks of postings against the query terms with
// BM25, using the index-wide statistics, best first (ties in source,
// document and ordinal order).
func RankBM25(postings []store.RAGPosting, terms []string, stats store.RAGStats) []Scored {
	if len(terms) == 0 || stats.Chunks == 0 || len(postings) == 0 {
		return nil
	}
	n := float64(stats.Chunks)
	avg := float64(stats.TotalLength) / n
	if avg <= 0 {
		avg = 1
	}
	idf := make(map[string]float64, len(terms))
	for _, t := range terms {
		df := float64(stats.DF[t])
		idf[t] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	scores := make(map[store.RAGChunkKey]float64, len(postings))
	for _, p := range postings {
		w, ok := idf[p.Term]
		if !ok || p.TF <= 0 {
			continue
		}
		tf := float64(p.TF)
		norm := bm25K1 * (1 - bm25B + bm25B*float64(p.Length)/avg)
		scores[p.RAGChunkKey] += w * tf * (bm25K1 + 1) / (tf + norm)
	}
	out := make([]Scored, 0, len(scores))
	for k, sc := range scores {
		if sc > 0 {
			out = append(out, Scored{Key: k, Score: sc})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Score != out[b].Score {
			return out[a].Score > out[b].Score
		}
		x, y := out[a].Key, out[b].Key
		if x.Source != y.Source {
			return x.Source < y.Source
		}
		if x.Document != y.Document {
			return x.Document < y.Document
		}
		return x.Ordinal < y.Ordinal
	})
	return out
}

func rankCosine(chunks []store.RAGChunk, q []float32) []Scored {
	out := make([]Scored, len(chunks))
	for i := range chunks {
		c := &chunks[i]
		out[i] = Scored{Key: store.RAGChunkKey{Source: c.Source, Document: c.Document, Ordinal: c.Ordinal},
			Score: Cosine(c.Embedding, q), chunk: c}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	return out
}
