package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
)

// Client calls the query API.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client of the query API at base (such as
// http://127.0.0.1:8086) presenting token.
func NewClient(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(base, "/"), token: token, hc: hc}
}

// get calls path with query and decodes the answer into out; an error
// answer becomes an *apierr.Error.
func (c *Client) get(ctx context.Context, path string, query url.Values, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("trace service at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb apierr.Body
		if json.Unmarshal(body, &eb) == nil && eb.Error != nil {
			return eb.Error
		}
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", path, err)
	}
	return nil
}

// Trace returns a whole trace (namespace "" for the credential's own).
func (c *Client) Trace(ctx context.Context, namespace, id string) (*Trace, error) {
	var out Trace
	return &out, c.get(ctx, "/v1/traces/"+url.PathEscape(id), nsQuery(namespace), &out)
}

// TraceListOptions select GET /v1/traces.
type TraceListOptions struct {
	Namespace, Selector, Since, Until, Continue string
	Limit                                       int
}

// Traces lists traces.
func (c *Client) Traces(ctx context.Context, o TraceListOptions) (*TraceList, error) {
	q := nsQuery(o.Namespace)
	for k, v := range map[string]string{"selector": o.Selector, "since": o.Since, "until": o.Until, "continue": o.Continue} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	var out TraceList
	return &out, c.get(ctx, "/v1/traces", q, &out)
}

// Metrics evaluates a metrics query.
func (c *Client) Metrics(ctx context.Context, namespace, query string) (*MetricResult, error) {
	q := nsQuery(namespace)
	q.Set("query", query)
	var out MetricResult
	return &out, c.get(ctx, "/v1/metrics", q, &out)
}

func nsQuery(ns string) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	return q
}
