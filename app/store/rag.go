package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RAGReader reads the RAG service's documents, chunks and term statistics
// (app/rag). Every method is scoped to one index of one namespace.
type RAGReader interface {
	// RAGDocumentList returns the documents of an index, ordered by
	// source and document.
	RAGDocumentList(ctx context.Context, namespace, index string) ([]RAGDocument, error)
	// RAGChunkList returns the chunks of an index matching q, ordered by
	// source, document and ordinal.
	RAGChunkList(ctx context.Context, q RAGChunkQuery) ([]RAGChunk, error)
	// RAGTermStats returns, for each of terms, how many chunks of the
	// index contain it (absent: none), and the index's chunk count and
	// total chunk length in terms.
	RAGTermStats(ctx context.Context, namespace, index string, terms []string) (RAGStats, error)
	// RAGPostingList returns the postings of q.Terms in an index: which
	// chunks contain each term, how often, and the chunk's length.
	RAGPostingList(ctx context.Context, q RAGPostingQuery) ([]RAGPosting, error)
	// RAGChunkGet returns the chunks of an index named by keys, in the
	// order of keys; keys that name no chunk are left out.
	RAGChunkGet(ctx context.Context, namespace, index string, keys []RAGChunkKey) ([]RAGChunk, error)
}

// RAGTx writes the RAG service's state inside a tenant transaction.
type RAGTx interface {
	// RAGDocumentPut inserts or replaces a document row.
	RAGDocumentPut(ctx context.Context, d RAGDocument) error
	// RAGDocumentDelete deletes a document and all its chunks. Deleting a
	// document that does not exist changes nothing.
	RAGDocumentDelete(ctx context.Context, namespace, index, source, document string) error
	// RAGChunkPut inserts or replaces the chunk at c's ordinal, and its
	// postings (one per term of c.Terms).
	RAGChunkPut(ctx context.Context, c RAGChunk) error
	// RAGChunkDeleteFrom deletes the chunks of a document whose ordinal is
	// from or more.
	RAGChunkDeleteFrom(ctx context.Context, namespace, index, source, document string, from int) error
	// RAGTermAdjust adds deltas to the index's document frequencies; a
	// term whose frequency drops to zero or below is deleted.
	RAGTermAdjust(ctx context.Context, namespace, index string, deltas map[string]int64) error
	// RAGIndexPurge deletes every document, chunk and term of an index.
	RAGIndexPurge(ctx context.Context, namespace, index string) error
}

// RAGDocument is one document of a knowledge source in an index.
type RAGDocument struct {
	Namespace string
	Index     string
	Source    string
	// Document identifies the document within its source: the inline
	// document's id, the file's path relative to the source's root, the
	// URL.
	Document string
	URI      string
	Title    string
	// Hash is the SHA-256 hex of the document's text.
	Hash     string
	Metadata map[string]string
	// Chunks is how many chunks the document has.
	Chunks    int
	UpdatedAt time.Time
}

// RAGChunk is one chunk of a document.
type RAGChunk struct {
	Namespace string
	Index     string
	Source    string
	Document  string
	// Ordinal is the chunk's place in its document, from 0.
	Ordinal int
	// Hash is the SHA-256 hex of Text.
	Hash string
	Text string
	// Start and End are the chunk's rune offsets in the document.
	Start, End int
	// Length is the chunk's length in terms.
	Length int
	// Terms maps each term of the chunk to its frequency.
	Terms map[string]int
	// Embedding is the chunk's vector; nil without an embedding model.
	Embedding []float32
	Metadata  map[string]string
}

// RAGChunkQuery selects chunks of one index.
type RAGChunkQuery struct {
	Namespace string
	Index     string
	// Sources limits the chunks to these sources; empty means all.
	Sources []string
	// Source and Document, when set, limit the chunks to one document.
	Source   string
	Document string
}

// RAGChunkKey names a chunk within an index.
type RAGChunkKey struct {
	Source   string
	Document string
	Ordinal  int
}

// RAGPostingQuery selects the postings of terms in one index.
type RAGPostingQuery struct {
	Namespace string
	Index     string
	Terms     []string
	// Sources limits the postings to these sources; empty means all.
	Sources []string
}

// RAGPosting says that a chunk contains a term TF times.
type RAGPosting struct {
	RAGChunkKey
	Term string
	TF   int
	// Length is the chunk's length in terms.
	Length int
}

// RAGStats are an index's term statistics.
type RAGStats struct {
	// DF maps a term to the number of chunks containing it.
	DF map[string]int64
	// Chunks is the index's number of chunks.
	Chunks int64
	// TotalLength is the sum of the lengths of its chunks, in terms.
	TotalLength int64
}

// ErrRAGInvalid is returned for a RAG row missing its namespace, index,
// source or document.
var ErrRAGInvalid = errors.New("store: invalid RAG row")

// CheckRAGDocument checks the key fields of a RAG row.
func CheckRAGDocument(namespace, index, source, document string) error {
	switch {
	case namespace == "":
		return fmt.Errorf("%w: namespace is required", ErrRAGInvalid)
	case index == "":
		return fmt.Errorf("%w: index is required", ErrRAGInvalid)
	case source == "":
		return fmt.Errorf("%w: source is required", ErrRAGInvalid)
	case document == "":
		return fmt.Errorf("%w: document is required", ErrRAGInvalid)
	}
	return nil
}

// CheckRAGIndex checks the namespace and index of a RAG call.
func CheckRAGIndex(namespace, index string) error {
	return CheckRAGDocument(namespace, index, "-", "-")
}

// EncodeRAGMetadata encodes metadata as a JSON object ("{}" for none).
func EncodeRAGMetadata(m map[string]string) ([]byte, error) {
	if m == nil {
		m = map[string]string{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode rag metadata: %w", err)
	}
	return b, nil
}

// EncodeRAGChunkJSON encodes the JSON columns of a chunk: terms, the
// embedding (nil without one) and metadata.
func EncodeRAGChunkJSON(c RAGChunk) (terms, embedding, metadata []byte, err error) {
	if c.Terms == nil {
		c.Terms = map[string]int{}
	}
	if terms, err = json.Marshal(c.Terms); err != nil {
		return nil, nil, nil, fmt.Errorf("encode rag chunk terms: %w", err)
	}
	if c.Embedding != nil {
		if embedding, err = json.Marshal(c.Embedding); err != nil {
			return nil, nil, nil, fmt.Errorf("encode rag chunk embedding: %w", err)
		}
	}
	if metadata, err = EncodeRAGMetadata(c.Metadata); err != nil {
		return nil, nil, nil, err
	}
	return terms, embedding, metadata, nil
}

// DecodeRAGChunkJSON decodes the JSON columns of a chunk into c.
func DecodeRAGChunkJSON(c *RAGChunk, terms, embedding, metadata []byte) error {
	if err := json.Unmarshal(terms, &c.Terms); err != nil {
		return fmt.Errorf("decode rag chunk terms of %s: %w", c.Document, err)
	}
	if len(embedding) > 0 {
		if err := json.Unmarshal(embedding, &c.Embedding); err != nil {
			return fmt.Errorf("decode rag chunk embedding of %s: %w", c.Document, err)
		}
	}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &c.Metadata); err != nil {
			return fmt.Errorf("decode rag chunk metadata of %s: %w", c.Document, err)
		}
	}
	return nil
}
