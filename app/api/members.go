package api

import "time"

// Member is a person of the tenant as GET /v1/members shows them.
type Member struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Email      string `json:"email"`
	Name       string `json:"name,omitempty"`
	// Status is invited until the first sign-in, then active.
	Status string `json:"status"`
	// Owner marks an owner of the tenant: every permission in every
	// namespace, and the tenant's members.
	Owner bool `json:"owner"`
	// Roles are the person's role bindings, by namespace ("*" for a
	// tenant-wide grant).
	Roles     []MemberRole `json:"roles"`
	InvitedBy string       `json:"invitedBy,omitempty"`
	CreatedAt time.Time    `json:"createdAt"`
	LastLogin *time.Time   `json:"lastLogin"`
}

// MemberRole is one role a member holds in one namespace.
type MemberRole struct {
	Namespace string `json:"namespace"`
	Role      string `json:"role"`
}

// MemberList is the answer of GET /v1/members.
type MemberList struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Items      []Member `json:"items"`
}

// MemberRoleRequest is the body of POST /v1/members/{email}/role.
type MemberRoleRequest struct {
	// Role is owner, or a namespace role: viewer, approver, editor or
	// admin. A namespace role given to an owner takes ownership away.
	Role string `json:"role"`
	// Namespace is where a namespace role is bound (default "default");
	// ignored for owner.
	Namespace string `json:"namespace,omitempty"`
}
