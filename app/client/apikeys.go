package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// APIKey is an API key as the control plane shows it. Secret is set only in
// the answer of APIKeyCreate; the server never shows it again.
type APIKey struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Namespace  string     `json:"namespace"`
	Role       string     `json:"role"`
	Agent      string     `json:"agent"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	Secret     string     `json:"secret,omitempty"`
}

// APIKeyCreateRequest is the body of POST /v1/apikeys.
type APIKeyCreateRequest struct {
	Name string `json:"name"`
	// Namespace scopes the key; "*" is every namespace of the tenant.
	Namespace string `json:"namespace"`
	// Role is viewer, editor, approver or admin; empty for an agent-bound
	// key, whose role is agent.
	Role string `json:"role,omitempty"`
	// Agent binds the key to one agent, for the workload token exchange.
	Agent string `json:"agent,omitempty"`
	// ExpiresIn is a duration such as "720h"; empty means no expiry.
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// APIKeyList is the answer of GET /v1/apikeys.
type APIKeyList struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Items      []APIKey `json:"items"`
}

// APIKeyCreate mints an API key. The returned key's Secret is the only copy
// of the secret anywhere.
func (c *Client) APIKeyCreate(ctx context.Context, req APIKeyCreateRequest) (*APIKey, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode api key request: %w", err)
	}
	var out APIKey
	if err := c.doJSON(ctx, http.MethodPost, "/v1/apikeys", nil, ContentTypeJSON, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// APIKeyList lists the API keys the caller may see, without secrets;
// namespace, when not empty, limits the list to one namespace ("*" the
// tenant-wide keys).
func (c *Client) APIKeyList(ctx context.Context, namespace string) (*APIKeyList, error) {
	var q url.Values
	if namespace != "" {
		q = url.Values{"namespace": {namespace}}
	}
	var out APIKeyList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/apikeys", q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// APIKeyRevoke revokes a key by id; it stops working at once. Revoking a
// revoked key returns it unchanged.
func (c *Client) APIKeyRevoke(ctx context.Context, id string) (*APIKey, error) {
	var out APIKey
	if err := c.doJSON(ctx, http.MethodPost, "/v1/apikeys/"+url.PathEscape(id)+"/revoke", nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
