package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// SSOConnection is a tenant's own OpenID Provider, read from the Tenant
// resource's spec.sso:
//
//	spec:
//	  sso:
//	    issuer: https://login.acme.example
//	    clientId: warden
//	    allowedDomains: [acme.example]
//	    roleClaim: groups
//	    roleMapping: {warden-admins: admin, warden-approvers: approver}
type SSOConnection struct {
	// Issuer is the provider's issuer URL.
	Issuer string `json:"issuer"`
	// ClientID is Warden's (public, PKCE) client id there.
	ClientID string `json:"clientId"`
	// AllowedDomains, when not empty, are the only e-mail domains that may
	// sign in to the tenant, whichever issuer they come from.
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// RoleClaim names the ID token claim (a string or a list of strings)
	// that RoleMapping maps to a namespace role.
	RoleClaim string `json:"roleClaim,omitempty"`
	// RoleMapping maps a claim value to viewer, editor, approver or admin.
	RoleMapping map[string]string `json:"roleMapping,omitempty"`
}

// TenantSSO reads the SSO connection of tenant from its Tenant resource; nil
// when the tenant has none.
func TenantSSO(ctx context.Context, r store.Reader, tenant string) (*SSOConnection, error) {
	o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: tenant})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tenant %q: %w", tenant, err)
	}
	raw, ok := o.Spec["sso"].(map[string]any)
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("tenant %q spec.sso: %w", tenant, err)
	}
	var c SSOConnection
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("tenant %q spec.sso: %w", tenant, err)
	}
	c.Issuer = strings.TrimSuffix(c.Issuer, "/")
	for i, d := range c.AllowedDomains {
		c.AllowedDomains[i] = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
	}
	return &c, nil
}

// DomainAllowed reports whether email may sign in under c's allowed domains.
func (c *SSOConnection) DomainAllowed(email string) bool {
	if c == nil || len(c.AllowedDomains) == 0 {
		return true
	}
	_, domain, _ := strings.Cut(strings.ToLower(email), "@")
	for _, d := range c.AllowedDomains {
		if domain == d {
			return true
		}
	}
	return false
}

// MapRole returns the most privileged role the claim values map to, or "".
func (c *SSOConnection) MapRole(claims map[string]any) string {
	if c == nil || c.RoleClaim == "" {
		return ""
	}
	var values []string
	switch v := claims[c.RoleClaim].(type) {
	case string:
		values = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				values = append(values, s)
			}
		}
	case []string:
		values = v
	}
	var roles []string
	for _, v := range values {
		if r := c.RoleMapping[v]; authz.IsNamespaceRole(r) {
			roles = append(roles, r)
		}
	}
	return authz.MostPrivileged(roles...)
}

// SSOBindingName returns the name of the RoleBinding that holds the role an
// SSO sign-in mapped for one person, kept apart from the bindings admins
// write so that neither overwrites the other.
func SSOBindingName(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return "sso-" + hex.EncodeToString(sum[:8])
}

// SyncSSORole makes the person's SSO RoleBinding in every namespace of the
// transaction's tenant grant role, or removes them when role is "". It runs
// at every SSO sign-in, so a change of the person's groups at the provider
// takes effect at their next sign-in.
func SyncSSORole(ctx context.Context, tx store.Tx, tenant, email, role string, now time.Time) error {
	if role != "" && !authz.IsNamespaceRole(role) {
		return fmt.Errorf("sso role mapping names %q, which is not viewer, editor, approver or admin", role)
	}
	svc := &Service{now: func() time.Time { return now }}
	p := auth.Principal{Tenant: tenant, Subject: "system:sso", System: true}
	name := SSOBindingName(email)
	cont := ""
	for {
		page, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindNamespace, Limit: store.MaxPageSize, Continue: cont})
		if err != nil {
			return fmt.Errorf("list namespaces: %w", err)
		}
		for _, ns := range page.Items {
			if role != "" {
				if err := svc.bindNamed(ctx, tx, p, ns.Metadata.Name, name, email, role); err != nil {
					return err
				}
				continue
			}
			key := resource.Key{Kind: resource.KindRoleBinding, Namespace: ns.Metadata.Name, Name: name}
			old, err := tx.ResourceDelete(ctx, key, "")
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("delete %s: %w", key, err)
			}
			if err := appliedEvent(ctx, tx, tenant, old, now.UTC(), p.Subject, "deleted"); err != nil {
				return err
			}
		}
		if page.Continue == "" {
			return nil
		}
		cont = page.Continue
	}
}
