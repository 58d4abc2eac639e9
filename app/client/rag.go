package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/warden-dev/warden/app/rag"
)

// The RAG API is served on its own port (8085): build the Client for it
// with New(ragURL, token).

func ragQuery(ns string) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	return q
}

// RAGIndex triggers a refresh of a RAGIndex (POST /v1/rag/{name}/index).
func (c *Client) RAGIndex(ctx context.Context, ns, name string) (*rag.Enqueued, error) {
	var out rag.Enqueued
	if err := c.doJSON(ctx, http.MethodPost, "/v1/rag/"+url.PathEscape(name)+"/index", ragQuery(ns), "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RAGRetrieve retrieves the top-k chunks of req.Index for req.Query (POST
// /v1/rag/{name}/retrieve).
func (c *Client) RAGRetrieve(ctx context.Context, ns string, req rag.RetrieveRequest) (*rag.RetrieveResponse, error) {
	name := req.Index
	req.Index = ""
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode retrieval: %w", err)
	}
	var out rag.RetrieveResponse
	if err := c.doJSON(ctx, http.MethodPost, "/v1/rag/"+url.PathEscape(name)+"/retrieve", ragQuery(ns), "application/json", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RAGSourceStatus returns the sync status of a KnowledgeSource (GET
// /v1/rag/sources/{id}/status).
func (c *Client) RAGSourceStatus(ctx context.Context, ns, source string) (*rag.SourceStatus, error) {
	var out rag.SourceStatus
	if err := c.doJSON(ctx, http.MethodGet, "/v1/rag/sources/"+url.PathEscape(source)+"/status", ragQuery(ns), "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
