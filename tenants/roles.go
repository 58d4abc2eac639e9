package tenants

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// MemberRoles is a member with what they hold: ownership and the roles
// their RoleBindings grant, per namespace.
type MemberRoles struct {
	store.Member
	// Roles are the person's bindings, ordered by namespace then role;
	// Namespace "*" is a tenant-wide grant.
	Roles []NamespaceRole
}

// NamespaceRole is one role a person holds in one namespace.
type NamespaceRole struct {
	Namespace string
	Role      string
}

// Summary is the member's roles in one phrase: "owner", "admin in
// default, viewer in dev", or "member" when they hold nothing.
func (m MemberRoles) Summary() string {
	if m.Owner {
		return auth.RoleOwner
	}
	if len(m.Roles) == 0 {
		return "member"
	}
	parts := make([]string, 0, len(m.Roles))
	for _, r := range m.Roles {
		parts = append(parts, r.Role+" in "+r.Namespace)
	}
	return strings.Join(parts, ", ")
}

// MembersWithRoles lists the people of p's tenant with their ownership and
// role bindings, ordered by e-mail. The console's members screen and
// GET /v1/members both read it.
func (s *Service) MembersWithRoles(ctx context.Context, p auth.Principal) ([]MemberRoles, error) {
	if err := s.authorize(ctx, p, auth.VerbList, "", authz.ObjMembers); err != nil {
		return nil, err
	}
	return s.membersWithRoles(ctx, p.Tenant, "")
}

// MemberWithRoles reads one member of p's tenant with their roles.
func (s *Service) MemberWithRoles(ctx context.Context, p auth.Principal, email string) (MemberRoles, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return MemberRoles{}, apierr.New(apierr.CodeInvalidRequest, "email: %v", err)
	}
	if err := s.authorize(ctx, p, auth.VerbGet, "", authz.ObjMembers); err != nil {
		return MemberRoles{}, err
	}
	ms, err := s.membersWithRoles(ctx, p.Tenant, email)
	if err != nil {
		return MemberRoles{}, err
	}
	if len(ms) == 0 {
		return MemberRoles{}, apierr.New(apierr.CodeNotFound, "%s is not a member of tenant %q", email, p.Tenant)
	}
	return ms[0], nil
}

// membersWithRoles reads the members (only email, when set) and joins
// their user grants.
func (s *Service) membersWithRoles(ctx context.Context, tenant, email string) ([]MemberRoles, error) {
	var ms []store.Member
	var b *authz.Bindings
	err := s.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		if email != "" {
			m, err := r.MemberGet(ctx, email)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			ms = []store.Member{*m}
		} else {
			var err error
			if ms, err = r.MemberList(ctx); err != nil {
				return err
			}
		}
		var err error
		b, err = authz.LoadBindings(ctx, r)
		return err
	})
	if err != nil {
		return nil, mapErr("list members", err)
	}
	roles := map[string][]NamespaceRole{}
	for _, g := range b.Grants {
		e, ok := strings.CutPrefix(g.Subject, authz.UserSubject(""))
		if !ok || g.Role == auth.RoleOwner {
			continue
		}
		roles[e] = append(roles[e], NamespaceRole{Namespace: g.Domain, Role: g.Role})
	}
	out := make([]MemberRoles, 0, len(ms))
	for _, m := range ms {
		rs := roles[strings.ToLower(m.Email)]
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].Namespace != rs[j].Namespace {
				return rs[i].Namespace < rs[j].Namespace
			}
			return rs[i].Role < rs[j].Role
		})
		out = append(out, MemberRoles{Member: m, Roles: rs})
	}
	return out, nil
}

// SetRole changes an existing member's role, for the console's change-role
// form and POST /v1/members/{email}/role alike:
//   - role owner makes them an owner of the tenant (namespace is
//     ignored);
//   - a namespace role (viewer, approver, editor, admin) binds them to it
//     in namespace (empty: default), replacing their role there; an
//     owner given a namespace role stops being an owner.
//
// Granting and taking away ownership is asked of app/authz
// (authz.ObjMembersOwner); binding a role, as apply on rolebindings in the
// namespace. Demoting the last owner is 409 Conflict. It returns the
// member as they now are (read without asking whether p may still list
// members: p may have just given away their own ownership).
func (s *Service) SetRole(ctx context.Context, p auth.Principal, email, role, namespace string) (MemberRoles, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return MemberRoles{}, apierr.New(apierr.CodeInvalidRequest, "set role: email: %v", err)
	}
	if role == auth.RoleOwner {
		err = s.GrantOwnership(ctx, p, email)
	} else {
		err = s.setNamespaceRole(ctx, p, email, role, namespace)
	}
	if err != nil {
		return MemberRoles{}, err
	}
	ms, err := s.membersWithRoles(ctx, p.Tenant, email)
	if err != nil {
		return MemberRoles{}, err
	}
	if len(ms) == 0 {
		return MemberRoles{}, apierr.New(apierr.CodeNotFound, "%s was removed from tenant %q meanwhile", email, p.Tenant)
	}
	return ms[0], nil
}

func (s *Service) setNamespaceRole(ctx context.Context, p auth.Principal, email, role, namespace string) error {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if err := checkRole(role); err != nil {
		return err
	}
	if err := s.authorize(ctx, p, auth.VerbApply, namespace, rolebindings); err != nil {
		return err
	}
	demoted := false
	err := s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		m, err := tx.MemberGet(ctx, email)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(apierr.CodeNotFound, "%s is not a member of tenant %q: invite them first", email, p.Tenant)
		}
		if err != nil {
			return fmt.Errorf("look up member: %w", err)
		}
		if err := namespaceExists(ctx, tx, namespace); err != nil {
			return err
		}
		if m.Owner {
			if err := s.authorize(ctx, p, authz.VerbCreate, "", authz.ObjMembersOwner); err != nil {
				return err
			}
			if err := lastOwner(ctx, tx, p.Tenant, email); err != nil {
				return err
			}
			m.Owner, demoted = false, true
			if err := tx.MemberUpsert(ctx, *m); err != nil {
				return fmt.Errorf("take ownership away: %w", err)
			}
			if err := s.handOver(ctx, tx, p, email); err != nil {
				return err
			}
		}
		return s.bind(ctx, tx, p, namespace, email, role)
	})
	if err != nil {
		return mapErr("set the role of "+email, err)
	}
	s.invalidate(p.Tenant)
	s.logger.InfoContext(ctx, "member role set", "tenant", p.Tenant, "namespace", namespace, "role", role, "demoted", demoted, "by", p.Subject)
	return nil
}

// lastOwner answers 409 Conflict when email is the only owner of tenant.
func lastOwner(ctx context.Context, r store.Reader, tenant, email string) error {
	all, err := r.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("list members: %w", err)
	}
	owners := 0
	for _, o := range all {
		if o.Owner {
			owners++
		}
	}
	if owners <= 1 {
		return apierr.New(apierr.CodeConflict, "%s is the last owner of tenant %q: make someone else owner first", email, tenant)
	}
	return nil
}

// handOver moves the Tenant resource's spec.owner, a grant of its own,
// from email to another owner among the members (or clears it when there
// is none), so that demoting or removing the person who signed the tenant
// up takes effect.
func (s *Service) handOver(ctx context.Context, tx store.Tx, p auth.Principal, email string) error {
	key := resource.Key{Kind: resource.KindTenant, Name: p.Tenant}
	o, err := tx.ResourceGet(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if owner, _ := o.Spec["owner"].(string); !strings.EqualFold(owner, email) {
		return nil
	}
	all, err := tx.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("list members: %w", err)
	}
	delete(o.Spec, "owner")
	for _, m := range all {
		if m.Owner && !strings.EqualFold(m.Email, email) {
			o.Spec["owner"] = m.Email
			break
		}
	}
	resource.Default(o)
	if errs := resource.Validate(o); len(errs) > 0 {
		return fmt.Errorf("%s: %w", key, errs)
	}
	stored, err := tx.ResourceUpdate(ctx, o)
	if err != nil {
		return fmt.Errorf("update %s: %w", key, err)
	}
	return appliedEvent(ctx, tx, p.Tenant, stored, s.now().UTC(), p.Subject, "updated")
}

// invalidate drops the authorizer's cached policy of tenant: members carry
// no resourceVersion, so an ownership change is not seen otherwise.
func (s *Service) invalidate(tenant string) {
	if inv, ok := s.az.(interface{ Invalidate(tenant string) }); ok {
		inv.Invalidate(tenant)
	}
}
