package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/warden-dev/warden/app/agbom"
)

// AgBOMOptions choose an AgBOM document.
type AgBOMOptions struct {
	// Format is cyclonedx (default), spdx or swid.
	Format string
	// Generation is the agent's generation; 0 means the newest compiled.
	Generation int64
}

func agbomQuery(ns string, gens map[string]int64) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	for k, v := range gens {
		if v > 0 {
			q.Set(k, strconv.FormatInt(v, 10))
		}
	}
	return q
}

// AgBOMGet reads the AgBOM of an agent in namespace ns
// (GET /v1/agbom/{agent}?namespace=&format=&generation=) and returns the
// document as served, with its content type.
func (c *Client) AgBOMGet(ctx context.Context, ns, agent string, opts AgBOMOptions) ([]byte, string, error) {
	q := agbomQuery(ns, map[string]int64{"generation": opts.Generation})
	if opts.Format != "" {
		q.Set("format", opts.Format)
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/agbom/"+url.PathEscape(agent), q, "", nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read the AgBOM of %s: %w", agent, err)
	}
	return doc, resp.Header.Get("Content-Type"), nil
}

// AgBOMRefresh regenerates the stored AgBOM of an agent's generation (0:
// the newest) (POST /v1/agbom/{agent}/refresh).
func (c *Client) AgBOMRefresh(ctx context.Context, ns, agent string, generation int64) (*agbom.RefreshResult, error) {
	var out agbom.RefreshResult
	q := agbomQuery(ns, map[string]int64{"generation": generation})
	if err := c.doJSON(ctx, http.MethodPost, "/v1/agbom/"+url.PathEscape(agent)+"/refresh", q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AgBOMDiff compares the AgBOMs of two generations of an agent
// (GET /v1/agbom/{agent}/diff?from=&to=); 0 for to means the newest, 0
// for from the one before to.
func (c *Client) AgBOMDiff(ctx context.Context, ns, agent string, from, to int64) (*agbom.Diff, error) {
	var out agbom.Diff
	q := agbomQuery(ns, map[string]int64{"from": from, "to": to})
	if err := c.doJSON(ctx, http.MethodGet, "/v1/agbom/"+url.PathEscape(agent)+"/diff", q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
