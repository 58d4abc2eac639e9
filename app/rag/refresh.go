package rag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Counts are what a refresh did to documents or chunks.
type Counts struct {
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
}

// SourceResult is one source's part of a refresh.
type SourceResult struct {
	Name      string   `json:"name"`
	Phase     string   `json:"phase"`
	Documents int      `json:"documents"`
	Chunks    int      `json:"chunks"`
	Errors    []string `json:"errors,omitempty"`
}

// RefreshResult is what a refresh did.
type RefreshResult struct {
	Index     string         `json:"index"`
	Namespace string         `json:"namespace"`
	Documents Counts         `json:"documents"`
	Chunks    Counts         `json:"chunks"`
	Sources   []SourceResult `json:"sources"`
}

// Source phases of a KnowledgeSource's status.
const (
	PhaseReady  = "Ready"
	PhaseFailed = "Failed"
)

// docKey names a document of an index.
type docKey struct{ source, id string }

// Refresh brings an index up to date with its sources: it fetches every
// source, writes the documents whose content changed (one transaction
// each), deletes the documents a source no longer has (and every document
// of a source the index no longer names), and writes the sync status of
// each source and of the index. A source that cannot be read keeps its
// stored documents and is marked Failed.
func (s *Service) Refresh(ctx context.Context, tenant, namespace, index string) (*RefreshResult, error) {
	var (
		spec     resource.RAGIndexSpec
		uid      string
		sources  = map[string]*resource.KnowledgeSourceSpec{}
		existing = map[docKey]store.RAGDocument{}
	)
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if spec, uid, err = getIndexObject(ctx, r, namespace, index); err != nil {
			return err
		}
		for _, name := range spec.Sources {
			obj, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindKnowledgeSource, Namespace: namespace, Name: name})
			if errors.Is(err, store.ErrNotFound) {
				sources[name] = nil
				continue
			}
			if err != nil {
				return fmt.Errorf("rag: read knowledge source %s: %w", name, err)
			}
			ks, err := resource.DecodeSpec[resource.KnowledgeSourceSpec](obj)
			if err != nil {
				return fmt.Errorf("rag: knowledge source %s: %w", name, err)
			}
			sources[name] = &ks
		}
		docs, err := r.RAGDocumentList(ctx, namespace, index)
		for _, d := range docs {
			existing[docKey{d.Source, d.Document}] = d
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res := &RefreshResult{Index: index, Namespace: namespace}
	size, overlap := chunking(spec)
	model := s.embeddingModel(spec)
	keep := map[docKey]bool{}
	for _, name := range spec.Sources {
		if slices.ContainsFunc(res.Sources, func(r SourceResult) bool { return r.Name == name }) {
			continue // named twice
		}
		sr := SourceResult{Name: name, Phase: PhaseReady}
		ks := sources[name]
		if ks == nil {
			sr.Phase, sr.Errors = PhaseFailed, []string{fmt.Sprintf("knowledge source %q not found in namespace %q", name, namespace)}
			res.Sources = append(res.Sources, sr)
			keepSource(existing, keep, name)
			continue
		}
		fetched := s.cfg.Fetcher.Fetch(ctx, *ks)
		sr.Errors = fetched.Errors
		if fetched.Err != nil {
			sr.Phase = PhaseFailed
			sr.Errors = append([]string{fetched.Err.Error()}, sr.Errors...)
			res.Sources = append(res.Sources, sr)
			keepSource(existing, keep, name)
			continue
		}
		sr.Documents = len(fetched.Documents)
		for _, d := range fetched.Documents {
			k := docKey{name, d.ID}
			keep[k] = true
			n, err := s.refreshDocument(ctx, tenant, namespace, index, uid, name, d, existing[k], size, overlap, model, res)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrIndexGone) {
					return nil, err
				}
				if len(sr.Errors) < maxErrors {
					sr.Errors = append(sr.Errors, fmt.Sprintf("document %q: %v", d.ID, err))
				}
				if old, ok := existing[k]; ok {
					sr.Chunks += old.Chunks
				}
				continue
			}
			sr.Chunks += n
		}
		res.Sources = append(res.Sources, sr)
	}
	// Documents no source yields any more.
	for _, k := range slices.SortedFunc(maps.Keys(existing), func(a, b docKey) int {
		if a.source != b.source {
			return cmpString(a.source, b.source)
		}
		return cmpString(a.id, b.id)
	}) {
		if keep[k] {
			continue
		}
		n, err := s.deleteDocument(ctx, tenant, namespace, index, uid, k)
		if err != nil {
			return nil, err
		}
		res.Documents.Deleted++
		res.Chunks.Deleted += n
	}
	if err := s.writeStatus(ctx, tenant, namespace, index, res); err != nil {
		return nil, err
	}
	return res, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keepSource keeps the stored documents of a source that could not be
// read this time.
func keepSource(existing map[docKey]store.RAGDocument, keep map[docKey]bool, source string) {
	for k := range existing {
		if k.source == source {
			keep[k] = true
		}
	}
}

// documentHash covers everything a document's chunks are made of, so an
// unchanged hash means unchanged chunks.
func documentHash(d Document, size, overlap int, model string) string {
	b, _ := json.Marshal(struct {
		Text, Title, URI, Model string
		Size, Overlap           int
		Metadata                map[string]string
	}{d.Text, d.Title, d.URI, model, size, overlap, d.Metadata})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func textHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// refreshDocument writes one document whose content changed and returns
// its chunk count. Chunks whose text, place and metadata did not change
// are left alone; changed ones are rewritten with fresh term frequencies
// (and embeddings, reused by text hash where the document had them).
// Nothing is written, and the error is ErrIndexGone, when the index of
// uid is no longer there.
func (s *Service) refreshDocument(ctx context.Context, tenant, namespace, index, uid, source string, d Document,
	old store.RAGDocument, size, overlap int, model string, res *RefreshResult) (int, error) {
	hash := documentHash(d, size, overlap, model)
	if old.Hash == hash {
		res.Documents.Unchanged++
		res.Chunks.Unchanged += old.Chunks
		return old.Chunks, nil
	}
	pieces := Chunk(d.Text, size, overlap)
	fresh := make([]store.RAGChunk, len(pieces))
	for i, p := range pieces {
		tf, n := TermFrequencies(p.Text)
		fresh[i] = store.RAGChunk{Namespace: namespace, Index: index, Source: source, Document: d.ID, Ordinal: i,
			Hash: textHash(p.Text), Text: p.Text, Start: p.Start, End: p.End, Length: n, Terms: tf, Metadata: d.Metadata}
	}
	if model != "" {
		if err := s.embedChunks(ctx, tenant, model, old, fresh); err != nil {
			return 0, err
		}
	}
	var added, updated, unchanged, deleted int
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		added, updated, unchanged, deleted = 0, 0, 0, 0
		stored, err := tx.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: namespace, Index: index, Source: source, Document: d.ID})
		if err != nil {
			return err
		}
		deltas := map[string]int64{}
		for i, c := range fresh {
			if i < len(stored) {
				if sameChunk(stored[i], c) {
					unchanged++
					continue
				}
				for t := range stored[i].Terms {
					deltas[t]--
				}
				updated++
			} else {
				added++
			}
			for t := range c.Terms {
				deltas[t]++
			}
			if err := tx.RAGChunkPut(ctx, c); err != nil {
				return err
			}
		}
		for _, c := range stored[min(len(fresh), len(stored)):] {
			for t := range c.Terms {
				deltas[t]--
			}
			deleted++
		}
		if deleted > 0 {
			if err := tx.RAGChunkDeleteFrom(ctx, namespace, index, source, d.ID, len(fresh)); err != nil {
				return err
			}
		}
		if err := tx.RAGTermAdjust(ctx, namespace, index, deltas); err != nil {
			return err
		}
		if err := tx.RAGDocumentPut(ctx, store.RAGDocument{Namespace: namespace, Index: index, Source: source, Document: d.ID,
			URI: d.URI, Title: d.Title, Hash: hash, Metadata: d.Metadata, Chunks: len(fresh), UpdatedAt: s.cfg.Now().UTC()}); err != nil {
			return err
		}
		return checkIndex(ctx, tx, namespace, index, uid)
	})
	if errors.Is(err, ErrIndexGone) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("rag: write document %s: %w", d.ID, err)
	}
	if old.Hash == "" {
		res.Documents.Added++
	} else {
		res.Documents.Updated++
	}
	res.Chunks.Added += added
	res.Chunks.Updated += updated
	res.Chunks.Unchanged += unchanged
	res.Chunks.Deleted += deleted
	return len(fresh), nil
}

// sameChunk reports whether a stored chunk already is c.
func sameChunk(a, b store.RAGChunk) bool {
	return a.Hash == b.Hash && a.Start == b.Start && a.End == b.End && maps.Equal(a.Metadata, b.Metadata) &&
		(a.Embedding != nil) == (b.Embedding != nil)
}

// embedChunks fills the embeddings of fresh: from the document's stored
// chunks of equal text, else from the embedder.
func (s *Service) embedChunks(ctx context.Context, tenant, model string, old store.RAGDocument, fresh []store.RAGChunk) error {
	known := map[string][]float32{}
	if old.Hash != "" {
		err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			cs, err := r.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: old.Namespace, Index: old.Index, Source: old.Source, Document: old.Document})
			for _, c := range cs {
				if c.Embedding != nil {
					known[c.Hash] = c.Embedding
				}
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	var need []int
	var inputs []string
	for i, c := range fresh {
		if v, ok := known[c.Hash]; ok {
			fresh[i].Embedding = v
			continue
		}
		need = append(need, i)
		inputs = append(inputs, c.Text)
	}
	if len(inputs) == 0 {
		return nil
	}
	vs, err := s.cfg.Embedder.Embed(ctx, model, inputs)
	if err != nil {
		return err
	}
	for j, i := range need {
		fresh[i].Embedding = vs[j]
	}
	return nil
}

// deleteDocument deletes a document and its chunks and returns how many
// chunks it had; ErrIndexGone, and nothing done, when the index of uid is
// no longer there.
func (s *Service) deleteDocument(ctx context.Context, tenant, namespace, index, uid string, k docKey) (int, error) {
	n := 0
	err := s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		stored, err := tx.RAGChunkList(ctx, store.RAGChunkQuery{Namespace: namespace, Index: index, Source: k.source, Document: k.id})
		if err != nil {
			return err
		}
		n = len(stored)
		deltas := map[string]int64{}
		for _, c := range stored {
			for t := range c.Terms {
				deltas[t]--
			}
		}
		if err := tx.RAGTermAdjust(ctx, namespace, index, deltas); err != nil {
			return err
		}
		if err := tx.RAGDocumentDelete(ctx, namespace, index, k.source, k.id); err != nil {
			return err
		}
		return checkIndex(ctx, tx, namespace, index, uid)
	})
	if errors.Is(err, ErrIndexGone) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("rag: delete document %s of %s: %w", k.id, k.source, err)
	}
	return n, nil
}

// writeStatus records each source's sync in its KnowledgeSource's status
// and the refresh in the RAGIndex's. A source or index deleted meanwhile
// is skipped.
func (s *Service) writeStatus(ctx context.Context, tenant, namespace, index string, res *RefreshResult) error {
	now := s.cfg.Now().UTC().Format(time.RFC3339)
	docs, chunks := 0, 0
	phase := PhaseReady
	for _, sr := range res.Sources {
		docs += sr.Documents
		chunks += sr.Chunks
		if sr.Phase != PhaseReady {
			phase = "Degraded"
		}
	}
	return s.cfg.Store.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for _, sr := range res.Sources {
			st := resource.KnowledgeSourceStatus{Phase: sr.Phase, LastSyncAt: now, Index: index,
				Documents: sr.Documents, Chunks: sr.Chunks, Errors: sr.Errors}
			m, err := resource.ToMap(st)
			if err != nil {
				return fmt.Errorf("rag: encode status: %w", err)
			}
			_, err = tx.ResourceUpdateStatus(ctx, resource.Key{Kind: resource.KindKnowledgeSource, Namespace: namespace, Name: sr.Name}, m, "")
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("rag: write the status of knowledge source %s: %w", sr.Name, err)
			}
		}
		_, err := tx.ResourceUpdateStatus(ctx, resource.Key{Kind: resource.KindRAGIndex, Namespace: namespace, Name: index}, map[string]any{
			"phase": phase, "lastRefreshAt": now, "documents": docs, "chunks": chunks,
		}, "")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("rag: write the status of RAG index %s: %w", index, err)
		}
		return nil
	})
}
