package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
)

// Apply creates or updates every resource of a multi-document YAML (or
// JSON) body in one transaction: all or nothing.
func (c *Client) Apply(ctx context.Context, body []byte) (*api.ApplyResult, error) {
	var out api.ApplyResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/resources/apply", nil, ContentTypeYAML, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Validate runs admission on body without writing anything.
func (c *Client) Validate(ctx context.Context, body []byte) (*api.ValidationResult, error) {
	var out api.ValidationResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/resources/validate", nil, ContentTypeYAML, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Diff compares body with the stored state without writing anything.
func (c *Client) Diff(ctx context.Context, body []byte) (*api.DiffResult, error) {
	var out api.DiffResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/resources/diff", nil, ContentTypeYAML, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one resource. plural is the path segment of the kind
// ("agents"); ns is ignored for tenant-scope kinds.
func (c *Client) Get(ctx context.Context, plural, ns, name string) (*resource.Object, error) {
	p, err := objectPath(plural, ns, name)
	if err != nil {
		return nil, err
	}
	var out resource.Object
	if err := c.doJSON(ctx, http.MethodGet, p, nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List reads one page of resources of a kind in namespace ns.
func (c *Client) List(ctx context.Context, plural, ns string, opts ListOptions) (*api.List, error) {
	p, err := collectionPath(plural, ns)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts.Selector != "" {
		q.Set("labelSelector", opts.Selector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	var out api.List
	if err := c.doJSON(ctx, http.MethodGet, p, q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAll follows continue tokens from opts.Continue to the last page and
// returns every item in one api.List. Its resourceVersion is the first page's,
// so a watch resumed from it misses nothing.
func (c *Client) ListAll(ctx context.Context, plural, ns string, opts ListOptions) (*api.List, error) {
	var all *api.List
	for {
		page, err := c.List(ctx, plural, ns, opts)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = page
		} else {
			all.Items = append(all.Items, page.Items...)
		}
		if page.Metadata.Continue == "" {
			all.Metadata.Continue = ""
			return all, nil
		}
		if page.Metadata.Continue == opts.Continue {
			return nil, fmt.Errorf("list %s: server repeated continue token %q", plural, opts.Continue)
		}
		opts.Continue = page.Metadata.Continue
	}
}

// Delete removes one resource.
func (c *Client) Delete(ctx context.Context, plural, ns, name string) error {
	p, err := objectPath(plural, ns, name)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodDelete, p, nil, "", nil, nil)
}

// Patch applies a JSON merge patch (RFC 7396) to the resource and returns
// it as stored. Only spec, metadata.labels and metadata.annotations can be
// patched.
func (c *Client) Patch(ctx context.Context, plural, ns, name string, mergePatch []byte) (*resource.Object, error) {
	p, err := objectPath(plural, ns, name)
	if err != nil {
		return nil, err
	}
	var out resource.Object
	if err := c.doJSON(ctx, http.MethodPatch, p, nil, ContentTypeMergePatch, mergePatch, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// maxWatchLine bounds one NDJSON line of the change feed.
const maxWatchLine = 16 << 20

// Watch opens the change feed of resources matching selector (for example
// "kind=Agent,namespace=default,team=support"), starting after
// resourceVersion ("" starts now). Errors before the stream starts, such as
// 410 Gone for a resume point that is too old, are returned directly. The
// channel is closed when the server ends the stream or ctx is done; a
// broken stream delivers one api.EventError first.
func (c *Client) Watch(ctx context.Context, selector, resourceVersion string) (<-chan api.WatchEvent, error) {
	q := url.Values{"watch": {"true"}}
	if selector != "" {
		q.Set("selector", selector)
	}
	if resourceVersion != "" {
		q.Set("resourceVersion", resourceVersion)
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/resources", q, "", nil)
	if err != nil {
		return nil, err
	}
	ch := make(chan api.WatchEvent)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		send := func(ev api.WatchEvent) bool {
			select {
			case ch <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), maxWatchLine)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 {
				continue
			}
			var ev api.WatchEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				send(api.WatchEvent{Type: api.EventError, Err: fmt.Errorf("decode watch event: %w", err)})
				return
			}
			if !send(ev) {
				return
			}
		}
		if err := sc.Err(); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			send(api.WatchEvent{Type: api.EventError, Err: fmt.Errorf("read watch stream: %w", err)})
		}
	}()
	return ch, nil
}

// collectionPath is /v1/namespaces/{ns}/{plural} for namespaced kinds and
// /v1/{plural} for tenant-scope kinds.
func collectionPath(plural, ns string) (string, error) {
	k, ok := resource.LookupPath(plural)
	if !ok {
		return "", fmt.Errorf("unknown resource kind %q", plural)
	}
	if !k.Namespaced {
		return "/v1/" + k.Plural, nil
	}
	if ns == "" {
		return "", fmt.Errorf("%s are namespaced: a namespace is required", k.Plural)
	}
	return "/v1/namespaces/" + url.PathEscape(ns) + "/" + k.Plural, nil
}

func objectPath(plural, ns, name string) (string, error) {
	if name == "" {
		return "", errors.New("a resource name is required")
	}
	p, err := collectionPath(plural, ns)
	if err != nil {
		return "", err
	}
	return p + "/" + url.PathEscape(name), nil
}
