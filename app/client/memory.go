package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/warden-dev/warden/app/memory"
)

// The memory service listens on a port of its own (8084): build the Client
// for it with the memory service's URL (MemoryURL derives it).

// MemoryURL returns the memory service's URL for a control plane at
// server: the same scheme and host on the memory service's default port.
func MemoryURL(server string, port int) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("server %q is not an absolute URL", server)
	}
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
	u.Path, u.RawQuery = "", ""
	return u.String(), nil
}

func memoryQuery(ns string) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	return q
}

func (c *Client) memoryPost(ctx context.Context, ns, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", path, err)
	}
	return c.doJSON(ctx, http.MethodPost, path, memoryQuery(ns), ContentTypeJSON, raw, out)
}

// MemoryWrite writes an item into memory name of namespace ns
// (POST /v1/memory/{name}/write).
func (c *Client) MemoryWrite(ctx context.Context, ns, name string, req memory.WriteRequest) (*memory.Item, error) {
	var out memory.Item
	if err := c.memoryPost(ctx, ns, "/v1/memory/"+url.PathEscape(name)+"/write", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemoryQuery reads items of memory name (POST /v1/memory/{name}/query).
func (c *Client) MemoryQuery(ctx context.Context, ns, name string, req memory.QueryRequest) (*memory.QueryResult, error) {
	var out memory.QueryResult
	if err := c.memoryPost(ctx, ns, "/v1/memory/"+url.PathEscape(name)+"/query", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemoryDelete deletes item id of memory name
// (DELETE /v1/memory/{name}/items/{id}).
func (c *Client) MemoryDelete(ctx context.Context, ns, name, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/memory/"+url.PathEscape(name)+"/items/"+url.PathEscape(id), memoryQuery(ns), "", nil, nil)
}

// MemorySummarize runs a summary pass on memory name
// (POST /v1/memory/{name}/summarize).
func (c *Client) MemorySummarize(ctx context.Context, ns, name string, req memory.SummarizeRequest) (*memory.SummarizeResult, error) {
	var out memory.SummarizeResult
	if err := c.memoryPost(ctx, ns, "/v1/memory/"+url.PathEscape(name)+"/summarize", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
