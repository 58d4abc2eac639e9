package client

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/warden-dev/warden/app/api"
	"net/http"
	"net/url"
)

// APIKeyCreate mints an API key. The returned key's Secret is the only copy
// of the secret anywhere.
func (c *Client) APIKeyCreate(ctx context.Context, req api.APIKeyCreateRequest) (*api.APIKey, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode api key request: %w", err)
	}
	var out api.APIKey
	if err := c.doJSON(ctx, http.MethodPost, "/v1/apikeys", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// APIKeyList lists the API keys the caller may see, without secrets;
// namespace, when not empty, limits the list to one namespace ("*" the
// tenant-wide keys).
func (c *Client) APIKeyList(ctx context.Context, namespace string) (*api.APIKeyList, error) {
	var q url.Values
	if namespace != "" {
		q = url.Values{"namespace": {namespace}}
	}
	var out api.APIKeyList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/apikeys", q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// APIKeyRevoke revokes a key by id; it stops working at once. Revoking a
// revoked key returns it unchanged.
func (c *Client) APIKeyRevoke(ctx context.Context, id string) (*api.APIKey, error) {
	var out api.APIKey
	if err := c.doJSON(ctx, http.MethodPost, "/v1/apikeys/"+url.PathEscape(id)+"/revoke", nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
