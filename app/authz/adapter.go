package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// ErrReadOnly is returned by the adapter's write methods: grants are
// RoleBinding resources, changed through apply like any other resource.
var ErrReadOnly = errors.New("authz: policies are read-only; apply RoleBinding resources instead")

// Subject kinds of a RoleBinding's spec.subjects[].kind.
const (
	SubjectUser   = "User"
	SubjectGroup  = "Group"
	SubjectAPIKey = "APIKey"
	SubjectAgent  = "Agent"
)

// Grant is one g line: Subject holds Role in Domain (a namespace, or
// AllDomains for the whole tenant).
type Grant struct {
	Subject string
	Role    string
	Domain  string
	// Source names where the grant comes from, for the audit record's
	// effective policy: "RoleBinding team-a/ops", "Tenant acme spec.owner",
	// "member ann@example.com (owner)".
	Source string
}

// String is the grant as audit records name it, e.g.
// "RoleBinding team-a/ops: admin@team-a".
func (g Grant) String() string {
	src := g.Source
	if src == "" {
		src = g.Subject
	}
	return src + ": " + g.Role + "@" + g.Domain
}

// Bindings is what one tenant's store says about who holds which role.
type Bindings struct {
	Grants []Grant
	// ResourceVersion is the newest resourceVersion among the RoleBinding
	// and Tenant resources the grants were read from (0 when none). Members
	// have no resourceVersion: their changes need an explicit Invalidate.
	ResourceVersion int64
	// Skipped describes bindings or subjects that were ignored (unknown role
	// or subject kind), for logs.
	Skipped []string
}

// LoadBindings reads a tenant's grants: every RoleBinding (its namespace is
// the domain), and the tenant's owners, tenant-wide: the owner named by the
// Tenant resource and every member with Owner set.
func LoadBindings(ctx context.Context, r store.Reader) (*Bindings, error) {
	b := &Bindings{}
	err := listAll(ctx, r, resource.KindRoleBinding, func(o *resource.Object) {
		b.observe(o)
		var spec resource.RoleBindingSpec
		if err := decodeSpec(o, &spec); err != nil {
			b.Skipped = append(b.Skipped, fmt.Sprintf("%s: %v", o.Key(), err))
			return
		}
		if !isBindable(spec.Role) {
			b.Skipped = append(b.Skipped, fmt.Sprintf("%s: role %q cannot be bound (one of %s)", o.Key(), spec.Role, strings.Join(BindableRoles(), ", ")))
			return
		}
		for i, s := range spec.Subjects {
			sub, ok := bindingSubject(s, o.Metadata.Namespace)
			if !ok {
				b.Skipped = append(b.Skipped, fmt.Sprintf("%s: subjects[%d]: unknown kind %q or empty name", o.Key(), i, s.Kind))
				continue
			}
			b.Grants = append(b.Grants, Grant{Subject: sub, Role: spec.Role, Domain: o.Metadata.Namespace,
				Source: "RoleBinding " + o.Metadata.Namespace + "/" + o.Metadata.Name})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("load role bindings: %w", err)
	}
	err = listAll(ctx, r, resource.KindTenant, func(o *resource.Object) {
		b.observe(o)
		var spec resource.TenantSpec
		if err := decodeSpec(o, &spec); err == nil && spec.Owner != "" {
			b.Grants = append(b.Grants, Grant{Subject: UserSubject(spec.Owner), Role: auth.RoleOwner, Domain: AllDomains,
				Source: "Tenant " + o.Metadata.Name + " spec.owner"})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("load tenant owners: %w", err)
	}
	members, err := r.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("load tenant members: %w", err)
	}
	for _, m := range members {
		if m.Owner {
			b.Grants = append(b.Grants, Grant{Subject: UserSubject(m.Email), Role: auth.RoleOwner, Domain: AllDomains,
				Source: "member " + strings.ToLower(m.Email) + " (owner)"})
		}
	}
	return b, nil
}

func (b *Bindings) observe(o *resource.Object) {
	if rv, err := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64); err == nil && rv > b.ResourceVersion {
		b.ResourceVersion = rv
	}
}

func listAll(ctx context.Context, r store.Reader, kind string, fn func(*resource.Object)) error {
	params := store.ListParams{Kind: kind, Limit: store.MaxPageSize}
	for {
		page, err := r.ResourceList(ctx, params)
		if err != nil {
			return err
		}
		for _, o := range page.Items {
			fn(o)
		}
		if page.Continue == "" {
			return nil
		}
		params.Continue = page.Continue
	}
}

func decodeSpec(o *resource.Object, into any) error {
	raw, err := json.Marshal(o.Spec)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

// UserSubject is the Casbin subject of a person: "user:<lower-cased e-mail>".
func UserSubject(email string) string { return "user:" + strings.ToLower(strings.TrimSpace(email)) }

// APIKeySubject is the Casbin subject of an API key: "apikey:<name>".
func APIKeySubject(name string) string { return "apikey:" + name }

// AgentSubject is the Casbin subject of a workload: "agent:<ns>/<agent>".
func AgentSubject(namespace, agent string) string { return "agent:" + namespace + "/" + agent }

// GroupSubject is the Casbin subject of an identity-provider group.
func GroupSubject(name string) string { return "group:" + name }

// bindingSubject maps a RoleBinding subject; an Agent subject names an agent
// of the binding's own namespace.
func bindingSubject(s resource.RoleSubject, ns string) (string, bool) {
	name := strings.TrimSpace(s.Name)
	if name == "" {
		return "", false
	}
	switch s.Kind {
	case SubjectUser:
		return UserSubject(name), true
	case SubjectGroup:
		return GroupSubject(name), true
	case SubjectAPIKey:
		return APIKeySubject(name), true
	case SubjectAgent:
		return AgentSubject(ns, name), true
	}
	return "", false
}

// adapter is a read-only Casbin adapter over what LoadBindings read plus the
// matrix built in code. It never touches a file or a database itself: the
// Authorizer reads the store in its own transaction and hands the result
// over, so the store stays the single source of truth.
type adapter struct {
	grants []Grant
}

var _ persist.Adapter = (*adapter)(nil)

// LoadPolicy loads the role matrix (p) and the grants (g).
func (a *adapter) LoadPolicy(m model.Model) error {
	for _, line := range policyLines() {
		if err := persist.LoadPolicyArray(line, m); err != nil {
			return err
		}
	}
	for _, g := range a.grants {
		if err := persist.LoadPolicyArray([]string{"g", g.Subject, roleSubject(g.Role), g.Domain}, m); err != nil {
			return err
		}
	}
	return nil
}

// SavePolicy refuses: grants are resources.
func (a *adapter) SavePolicy(model.Model) error { return ErrReadOnly }

// AddPolicy refuses: grants are resources.
func (a *adapter) AddPolicy(string, string, []string) error { return ErrReadOnly }

// RemovePolicy refuses: grants are resources.
func (a *adapter) RemovePolicy(string, string, []string) error { return ErrReadOnly }

// RemoveFilteredPolicy refuses: grants are resources.
func (a *adapter) RemoveFilteredPolicy(string, string, int, ...string) error { return ErrReadOnly }
