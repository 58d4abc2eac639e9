package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/warden-dev/warden/app/api"
)

// MemberList lists the people of the caller's tenant with their ownership
// and roles (owners only).
func (c *Client) MemberList(ctx context.Context) (*api.MemberList, error) {
	var out api.MemberList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/members", nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemberGet reads one member by e-mail.
func (c *Client) MemberGet(ctx context.Context, email string) (*api.Member, error) {
	var out api.Member
	if err := c.doJSON(ctx, http.MethodGet, "/v1/members/"+url.PathEscape(email), nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MemberSetRole changes a member's role: owner grants ownership, a
// namespace role binds it in req.Namespace (and takes ownership away from
// an owner). Demoting the last owner is a *Error with status 409.
func (c *Client) MemberSetRole(ctx context.Context, email string, req api.MemberRoleRequest) (*api.Member, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode role request: %w", err)
	}
	var out api.Member
	if err := c.doJSON(ctx, http.MethodPost, "/v1/members/"+url.PathEscape(email)+"/role", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
