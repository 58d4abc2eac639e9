package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
)

// ToolCallListOptions filters a list of tool calls. Empty fields do not
// filter.
type ToolCallListOptions struct {
	// Agent keeps the calls of one agent (spec.agentRef.name).
	Agent string
	// Tool keeps the calls of one tool (spec.toolRef.name).
	Tool string
	// Phase keeps the calls in one phase (status.phase), e.g. Failed.
	Phase string
	// Since keeps the calls created after it: a duration back from now
	// ("1h") or an RFC 3339 time.
	Since string
	// Selector is a label selector, as in ListOptions.
	Selector string
	// Limit is the page size; 0 lets the server choose.
	Limit int
	// Continue is the opaque token of the previous page.
	Continue string
}

func (o ToolCallListOptions) query() url.Values {
	return filterQuery(map[string]string{"agent": o.Agent, "tool": o.Tool, "phase": o.Phase, "since": o.Since}, o.Selector, o.Limit, o.Continue)
}

// ToolCallList reads one page of the tool calls of namespace ns
// (GET /v1/namespaces/{ns}/toolcalls?agent=…&tool=…&phase=…&since=…).
func (c *Client) ToolCallList(ctx context.Context, ns string, opts ToolCallListOptions) (*api.List, error) {
	return c.listFiltered(ctx, "toolcalls", ns, opts.query())
}

// ToolCallListAll follows continue tokens from opts.Continue to the last
// page and returns every matching tool call in one api.List, oldest first
// (call names sort by creation time).
func (c *Client) ToolCallListAll(ctx context.Context, ns string, opts ToolCallListOptions) (*api.List, error) {
	return c.listAllFiltered(ctx, "toolcalls", ns, opts.query())
}

// ToolCallGet reads one tool call and decodes it.
func (c *Client) ToolCallGet(ctx context.Context, ns, name string) (*ToolCall, error) {
	o, err := c.Get(ctx, "toolcalls", ns, name)
	if err != nil {
		return nil, err
	}
	return DecodeToolCall(o)
}

// ToolCall is a typed view of a ToolCall record. Object is the record as
// the server sent it.
type ToolCall struct {
	Object *resource.Object
	Spec   resource.ToolCallSpec
	Status resource.ToolCallStatus
}

// DecodeToolCall decodes the spec and status of a ToolCall record.
func DecodeToolCall(o *resource.Object) (*ToolCall, error) {
	if o == nil || o.Kind != resource.KindToolCall {
		return nil, errors.New("not a ToolCall")
	}
	spec, err := resource.DecodeSpec[resource.ToolCallSpec](o)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Key(), err)
	}
	st, err := resource.DecodeStatus[resource.ToolCallStatus](o)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Key(), err)
	}
	return &ToolCall{Object: o, Spec: spec, Status: st}, nil
}

// Name returns the call's name, tc-<26 characters>.
func (t *ToolCall) Name() string { return t.Object.Metadata.Name }

// Finished reports whether the call is in a terminal phase.
func (t *ToolCall) Finished() bool { return resource.ToolCallFinished(t.Status.Phase) }

// Duration is the time the tool ran, completedAt - startedAt; false when
// the call has not both started and completed (a denied call never
// starts). Time spent awaiting approval is not counted: an approved call
// starts when it resumes.
func (t *ToolCall) Duration() (time.Duration, bool) {
	if t.Status.StartedAt == "" || t.Status.CompletedAt == "" {
		return 0, false
	}
	start, err1 := time.Parse(time.RFC3339Nano, t.Status.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, t.Status.CompletedAt)
	if err1 != nil || err2 != nil || end.Before(start) {
		return 0, false
	}
	return end.Sub(start), true
}

// ApprovalName returns the name of the Approval a call pauses on: the
// gateway gives a call tc-<suffix> the approval ap-<suffix>. Any other name
// is returned unchanged, so that an approval's own name passes through.
func ApprovalName(call string) string {
	if len(call) > 3 && call[:3] == "tc-" {
		return "ap-" + call[3:]
	}
	return call
}

// CallName returns the name of the tool call an approval of the gateway
// belongs to, ap-<suffix> → tc-<suffix>; "" for any other name.
func CallName(approval string) string {
	if len(approval) > 3 && approval[:3] == "ap-" {
		return "tc-" + approval[3:]
	}
	return ""
}

// filterQuery builds the query of a filtered list.
func filterQuery(filters map[string]string, selector string, limit int, cont string) url.Values {
	q := url.Values{}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	if selector != "" {
		q.Set("labelSelector", selector)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cont != "" {
		q.Set("continue", cont)
	}
	return q
}

// listFiltered reads one page of a list with the kind's query filters.
func (c *Client) listFiltered(ctx context.Context, plural, ns string, q url.Values) (*api.List, error) {
	p, err := collectionPath(plural, ns)
	if err != nil {
		return nil, err
	}
	var out api.List
	if err := c.doJSON(ctx, http.MethodGet, p, q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// listAllFiltered follows continue tokens, as ListAll does. A filtered
// page may be empty and still carry a continue token: the server filters
// by time after reading the page.
func (c *Client) listAllFiltered(ctx context.Context, plural, ns string, q url.Values) (*api.List, error) {
	var all *api.List
	for {
		page, err := c.listFiltered(ctx, plural, ns, q)
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
			if all.Items == nil {
				all.Items = []*resource.Object{}
			}
			return all, nil
		}
		if page.Metadata.Continue == q.Get("continue") {
			return nil, fmt.Errorf("list %s: server repeated continue token %q", plural, page.Metadata.Continue)
		}
		q.Set("continue", page.Metadata.Continue)
	}
}
