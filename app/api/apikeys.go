package api

import "time"

// APIKey is an API key as the control plane shows it: never its hash, and
// Secret only in the answer of POST /v1/apikeys.
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
	// Role is viewer, approver, editor or admin; empty for an agent-bound
	// key, whose role is agent.
	Role string `json:"role,omitempty"`
	// Agent binds the key to one agent of Namespace, for the workload token
	// exchange.
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
