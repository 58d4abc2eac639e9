package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/audit"
)

// AuditListOptions filters an audit listing.
type AuditListOptions struct {
	Actor     string
	Verb      string
	Namespace string
	// Since is an RFC 3339 time or a duration such as "1h".
	Since string
	// After is the sequence number to continue after.
	After int64
	Limit int
}

// AuditList reads one page of the tenant's audit log, in chain order.
func (c *Client) AuditList(ctx context.Context, opts AuditListOptions) (*api.AuditList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"actor": opts.Actor, "verb": opts.Verb, "namespace": opts.Namespace, "since": opts.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if opts.After > 0 {
		q.Set("after", strconv.FormatInt(opts.After, 10))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out api.AuditList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/audit", q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AuditVerify walks the tenant's whole audit chain on the server.
func (c *Client) AuditVerify(ctx context.Context) (*audit.Report, error) {
	var out audit.Report
	if err := c.doJSON(ctx, http.MethodGet, "/v1/audit/verify", nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
