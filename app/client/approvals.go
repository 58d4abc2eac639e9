package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/resource"
)

// ApprovalListOptions filters a list of approvals. Empty fields do not
// filter.
type ApprovalListOptions struct {
	// Agent keeps the approvals of one agent's calls.
	Agent string
	// Tool keeps the approvals of one tool.
	Tool string
	// Status keeps the approvals in one status, e.g. resource.ApprovalPending.
	Status string
	// Since keeps the approvals created after it: a duration back from
	// now ("1h") or an RFC 3339 time.
	Since string
	// Selector is a label selector, as in ListOptions.
	Selector string
	// Limit is the page size; 0 lets the server choose.
	Limit int
	// Continue is the opaque token of the previous page.
	Continue string
}

func (o ApprovalListOptions) query() url.Values {
	return filterQuery(map[string]string{"agent": o.Agent, "tool": o.Tool, "status": o.Status, "since": o.Since}, o.Selector, o.Limit, o.Continue)
}

// ApprovalList reads one page of the approvals of namespace ns
// (GET /v1/namespaces/{ns}/approvals?agent=…&tool=…&status=…&since=…).
func (c *Client) ApprovalList(ctx context.Context, ns string, opts ApprovalListOptions) (*api.List, error) {
	return c.listFiltered(ctx, "approvals", ns, opts.query())
}

// ApprovalListAll follows continue tokens from opts.Continue to the last
// page and returns every matching approval in one api.List.
func (c *Client) ApprovalListAll(ctx context.Context, ns string, opts ApprovalListOptions) (*api.List, error) {
	return c.listAllFiltered(ctx, "approvals", ns, opts.query())
}

// ApprovalGet reads one approval and decodes it.
func (c *Client) ApprovalGet(ctx context.Context, ns, name string) (*Approval, error) {
	o, err := c.Get(ctx, "approvals", ns, name)
	if err != nil {
		return nil, err
	}
	return DecodeApproval(o)
}

// ApprovalDecide records a decision on a pending approval and returns the
// decided approval. With a namespace it posts to
// /v1/namespaces/{ns}/approvals/{name}/decide; with ns "" to
// /v1/approvals/{name}/decide, where the server finds the approval among
// the namespaces the credential reaches. A decided, expired or cancelled
// approval answers 409 Conflict.
func (c *Client) ApprovalDecide(ctx context.Context, ns, name string, req api.DecideRequest) (*Approval, error) {
	if name == "" {
		return nil, errors.New("an approval name is required")
	}
	p := "/v1/approvals/" + url.PathEscape(name) + "/decide"
	if ns != "" {
		p = "/v1/namespaces/" + url.PathEscape(ns) + "/approvals/" + url.PathEscape(name) + "/decide"
	}
	return c.decide(ctx, p, req)
}

// ApprovalOverride is the break-glass decision (POST
// /v1/approvals/{name}/override): it needs the breakglass role and a
// rationale, and records status overridden.
func (c *Client) ApprovalOverride(ctx context.Context, name string, req api.DecideRequest) (*Approval, error) {
	if name == "" {
		return nil, errors.New("an approval name is required")
	}
	return c.decide(ctx, "/v1/approvals/"+url.PathEscape(name)+"/override", req)
}

func (c *Client) decide(ctx context.Context, path string, req api.DecideRequest) (*Approval, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode decision: %w", err)
	}
	var out resource.Object
	if err := c.doJSON(ctx, http.MethodPost, path, nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return DecodeApproval(&out)
}

// Approval is a typed view of an Approval record. Object is the record as
// the server sent it.
type Approval struct {
	Object *resource.Object
	Spec   resource.ApprovalSpec
	Status resource.ApprovalStatus
}

// DecodeApproval decodes the spec and status of an Approval record.
func DecodeApproval(o *resource.Object) (*Approval, error) {
	if o == nil || o.Kind != resource.KindApproval {
		return nil, errors.New("not an Approval")
	}
	spec, err := resource.DecodeSpec[resource.ApprovalSpec](o)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Key(), err)
	}
	st, err := resource.DecodeStatus[resource.ApprovalStatus](o)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Key(), err)
	}
	return &Approval{Object: o, Spec: spec, Status: st}, nil
}

// Name returns the approval's name, ap-<26 characters> for the approval of
// a tool call.
func (a *Approval) Name() string { return a.Object.Metadata.Name }
