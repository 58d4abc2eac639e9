package rag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/resource"
)

// Request limits.
const (
	// MaxQueryBytes bounds a query.
	MaxQueryBytes = 4096
	// MaxFilterEntries bounds the sources and metadata pairs of a filter.
	MaxFilterEntries = 32
)

// Filter narrows a retrieval.
type Filter struct {
	// Sources limits the chunks to these KnowledgeSources.
	Sources []string `json:"sources,omitempty"`
	// Metadata keeps chunks whose metadata has every pair.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RetrieveRequest is the body of POST /v1/rag/{name}/retrieve (Index
// comes from the path there) and of POST /v1/rag/retrieve.
type RetrieveRequest struct {
	Index  string `json:"index,omitempty"`
	Query  string `json:"query"`
	TopK   int    `json:"topK,omitempty"`
	Filter Filter `json:"filter,omitempty"`
}

// IndexRequest is the body of POST /v1/rag/index (and, optionally empty,
// of POST /v1/rag/{name}/index).
type IndexRequest struct {
	Index string `json:"index,omitempty"`
}

// decodeStrict decodes one JSON object into v: unknown fields and
// trailing data are refused.
func decodeStrict(body []byte, v any, what string) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: the body is not a valid %s: %v", ErrInvalid, what, err)
	}
	if d.More() {
		return fmt.Errorf("%w: the body has data after the JSON object", ErrInvalid)
	}
	return nil
}

// DecodeRetrieveRequest parses and checks a retrieval body. pathIndex is
// the index named by the path ("" for /v1/rag/retrieve); a body naming
// another index is refused.
func DecodeRetrieveRequest(body []byte, pathIndex string) (RetrieveRequest, error) {
	var req RetrieveRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, fmt.Errorf(`%w: the body is empty: send {"query": "…", "topK": 5}`, ErrInvalid)
	}
	if err := decodeStrict(body, &req, "retrieval"); err != nil {
		return req, err
	}
	if err := resolveIndex(&req.Index, pathIndex); err != nil {
		return req, err
	}
	switch {
	case len(bytes.TrimSpace([]byte(req.Query))) == 0:
		return req, fmt.Errorf("%w: query is required", ErrInvalid)
	case len(req.Query) > MaxQueryBytes:
		return req, fmt.Errorf("%w: query is longer than %d bytes", ErrInvalid, MaxQueryBytes)
	case !utf8.ValidString(req.Query):
		return req, fmt.Errorf("%w: query is not valid UTF-8", ErrInvalid)
	case req.TopK < 0 || req.TopK > MaxTopK:
		return req, fmt.Errorf("%w: topK must be between 1 and %d", ErrInvalid, MaxTopK)
	case len(req.Filter.Sources) > MaxFilterEntries || len(req.Filter.Metadata) > MaxFilterEntries:
		return req, fmt.Errorf("%w: a filter names at most %d sources and %d metadata pairs", ErrInvalid, MaxFilterEntries, MaxFilterEntries)
	}
	for i, s := range req.Filter.Sources {
		if !resource.IsDNS1123Label(s) {
			return req, fmt.Errorf("%w: filter.sources[%d] %q is not a knowledge source name", ErrInvalid, i, s)
		}
	}
	return req, nil
}

// DecodeIndexRequest parses an index request; the body may be empty when
// the path names the index.
func DecodeIndexRequest(body []byte, pathIndex string) (IndexRequest, error) {
	var req IndexRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req, "index request"); err != nil {
			return req, err
		}
	}
	return req, resolveIndex(&req.Index, pathIndex)
}

// resolveIndex reconciles the index of the body with the path's.
func resolveIndex(body *string, path string) error {
	switch {
	case path != "" && *body != "" && *body != path:
		return fmt.Errorf("%w: the body names index %q but the path %q", ErrInvalid, *body, path)
	case path != "":
		*body = path
	case *body == "":
		return fmt.Errorf(`%w: name the index: POST /v1/rag/{name}/… or {"index": "<name>"}`, ErrInvalid)
	}
	if !resource.IsDNS1123Label(*body) {
		return fmt.Errorf("%w: index %q is not a RAGIndex name (a DNS-1123 label)", ErrInvalid, *body)
	}
	return nil
}
