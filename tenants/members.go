package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// EmailAnnotation names, on a RoleBinding written by this package, the
// e-mail of the person it binds.
const EmailAnnotation = "warden.dev/email"

// MemberBindingName returns the name of the RoleBinding that binds one
// person in a namespace: "user-" and 16 hex digits of the SHA-256 of the
// lower-cased e-mail, a DNS-1123 label for every address.
func MemberBindingName(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return "user-" + hex.EncodeToString(sum[:8])
}

// authorize asks app/authz whether p may do verb on object in namespace
// ns ("" = tenant scope); tenants keeps no rank of its own.
func (s *Service) authorize(ctx context.Context, p auth.Principal, verb, ns, object string) error {
	if p.Tenant == "" {
		return apierr.New(apierr.CodeUnauthenticated, "the request carries no tenant")
	}
	if s.az == nil {
		if p.System {
			return nil
		}
		return apierr.New(apierr.CodeForbidden, "%s may not %s %s: no authorizer is configured", p.Subject, verb, object)
	}
	err := s.az.Authorize(ctx, p, verb, ns, object)
	if errors.Is(err, auth.ErrForbidden) {
		return apierr.New(apierr.CodeForbidden, "%v", err)
	}
	return err
}

// Objects of app/authz that tenants asks about.
const (
	rolebindings = "rolebindings"
	namespaces   = "namespaces"
)

// Invite adds a person to p's tenant with status invited (an existing member
// keeps their status) and binds them to role in namespace (default
// "default") with a RoleBinding for `User <email>`. Owners and admins only.
// The person becomes active on first sign-in.
func (s *Service) Invite(ctx context.Context, p auth.Principal, email, role, namespace string) (*store.Member, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, apierr.New(apierr.CodeInvalidRequest, "invite: email: %v", err)
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if err := checkRole(role); err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, p, auth.VerbApply, namespace, rolebindings); err != nil {
		return nil, err
	}
	var out store.Member
	err = s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		if err := namespaceExists(ctx, tx, namespace); err != nil {
			return err
		}
		m, err := tx.MemberGet(ctx, email)
		switch {
		case errors.Is(err, store.ErrNotFound):
			m = &store.Member{Tenant: p.Tenant, Email: email, Status: store.MemberInvited, InvitedBy: p.Subject, CreatedAt: s.now().UTC()}
			if err := tx.MemberUpsert(ctx, *m); err != nil {
				return fmt.Errorf("add member: %w", err)
			}
			if s.inviter != nil {
				if err := s.inviter.InviteTx(ctx, tx, p.Tenant, namespace, email, role, p.Subject); err != nil {
					return fmt.Errorf("send the invitation: %w", err)
				}
			}
		case err != nil:
			return fmt.Errorf("look up member: %w", err)
		}
		out = *m
		return s.bind(ctx, tx, p, namespace, email, role)
	})
	if err != nil {
		return nil, mapErr("invite "+email, err)
	}
	s.invalidate(p.Tenant)
	s.logger.InfoContext(ctx, "member invited", "tenant", p.Tenant, "namespace", namespace, "role", role, "by", p.Subject)
	return &out, nil
}

// BindRole grants an existing member role in namespace, creating or
// updating that person's RoleBinding there. Owners and admins of the
// namespace only.
func (s *Service) BindRole(ctx context.Context, p auth.Principal, namespace, email, role string) (*resource.Object, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, apierr.New(apierr.CodeInvalidRequest, "bind role: email: %v", err)
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if err := checkRole(role); err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, p, auth.VerbApply, namespace, rolebindings); err != nil {
		return nil, err
	}
	var out *resource.Object
	err = s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.MemberGet(ctx, email); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return apierr.New(apierr.CodeNotFound, "%s is not a member of tenant %q: invite them first", email, p.Tenant)
			}
			return err
		}
		if err := namespaceExists(ctx, tx, namespace); err != nil {
			return err
		}
		if err := s.bind(ctx, tx, p, namespace, email, role); err != nil {
			return err
		}
		out, err = tx.ResourceGet(ctx, resource.Key{Kind: resource.KindRoleBinding, Namespace: namespace, Name: MemberBindingName(email)})
		return err
	})
	if err != nil {
		return nil, mapErr("bind role", err)
	}
	s.invalidate(p.Tenant)
	return out, nil
}

// bind creates or updates the person's RoleBinding in namespace.
func (s *Service) bind(ctx context.Context, tx store.Tx, p auth.Principal, namespace, email, role string) error {
	return s.bindNamed(ctx, tx, p, namespace, MemberBindingName(email), email, role)
}

// bindNamed creates or updates the RoleBinding name in namespace so that it
// grants role to `User <email>`.
func (s *Service) bindNamed(ctx context.Context, tx store.Tx, p auth.Principal, namespace, name, email, role string) error {
	t := s.now().UTC()
	key := resource.Key{Kind: resource.KindRoleBinding, Namespace: namespace, Name: name}
	o := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindRoleBinding,
		Metadata: resource.ObjectMeta{Name: key.Name, Namespace: namespace, Annotations: map[string]string{EmailAnnotation: email}},
		Spec:     map[string]any{"role": role, "subjects": []any{map[string]any{"kind": "User", "name": email}}}}
	existing, err := tx.ResourceGet(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return createResource(ctx, tx, p.Tenant, o, t, p.Subject)
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	}
	resource.Default(o)
	if errs := resource.Validate(o); len(errs) > 0 {
		return fmt.Errorf("%s: %w", key, errs)
	}
	o.Metadata.ResourceVersion = existing.Metadata.ResourceVersion
	stored, err := tx.ResourceUpdate(ctx, o)
	if err != nil {
		return fmt.Errorf("update %s: %w", key, err)
	}
	if stored.Metadata.ResourceVersion == existing.Metadata.ResourceVersion {
		return nil // unchanged
	}
	return appliedEvent(ctx, tx, p.Tenant, stored, t, p.Subject, "updated")
}

// CreateNamespace creates a namespace in p's tenant with the environments
// dev, staging and prod, like the default namespace of a new tenant tenant.
// Tenant owners and tenant-wide admins only.
func (s *Service) CreateNamespace(ctx context.Context, p auth.Principal, name, displayName string) (*resource.Object, error) {
	if !resource.IsDNS1123Label(name) {
		return nil, apierr.New(apierr.CodeInvalidRequest, "namespace name %q is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)", name)
	}
	if err := s.authorize(ctx, p, auth.VerbApply, "", namespaces); err != nil {
		return nil, err
	}
	spec := map[string]any{}
	if displayName != "" {
		spec["displayName"] = displayName
	}
	var out *resource.Object
	err := s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		t := s.now().UTC()
		ns := &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace, Metadata: resource.ObjectMeta{Name: name}, Spec: spec}
		if err := createResource(ctx, tx, p.Tenant, ns, t, p.Subject); err != nil {
			if errors.Is(err, store.ErrAlreadyExists) {
				return apierr.New(apierr.CodeConflict, "namespace %q already exists", name)
			}
			return err
		}
		for _, o := range SeedObjects(store.TenantRecord{ID: p.Tenant}, "")[2:] {
			o.Metadata.Namespace = name
			if err := createResource(ctx, tx, p.Tenant, o, t, p.Subject); err != nil {
				return err
			}
		}
		var err error
		out, err = tx.ResourceGet(ctx, resource.Key{Kind: resource.KindNamespace, Name: name})
		return err
	})
	if err != nil {
		return nil, mapErr("create namespace "+name, err)
	}
	return out, nil
}

// GrantOwnership makes an existing member an owner of p's tenant. Whether
// p may is asked of app/authz (authz.ObjMembersOwner, which only owners
// hold).
func (s *Service) GrantOwnership(ctx context.Context, p auth.Principal, email string) error {
	email, err := NormalizeEmail(email)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "grant ownership: email: %v", err)
	}
	if err := s.authorize(ctx, p, authz.VerbCreate, "", authz.ObjMembersOwner); err != nil {
		return err
	}
	err = s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		m, err := tx.MemberGet(ctx, email)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(apierr.CodeNotFound, "%s is not a member of tenant %q: invite them first", email, p.Tenant)
		}
		if err != nil {
			return err
		}
		if m.Owner {
			return nil
		}
		m.Owner = true
		return tx.MemberUpsert(ctx, *m)
	})
	if err != nil {
		return mapErr("grant ownership to "+email, err)
	}
	s.invalidate(p.Tenant)
	s.logger.InfoContext(ctx, "ownership granted", "tenant", p.Tenant, "by", p.Subject)
	return nil
}

// RemoveMember removes a person from p's tenant with every RoleBinding this
// package wrote for them. Their sessions stop working on the next request,
// because session authentication re-reads the membership. Only an owner may
// remove an owner, and the last owner cannot be removed.
func (s *Service) RemoveMember(ctx context.Context, p auth.Principal, email string) error {
	email, err := NormalizeEmail(email)
	if err != nil {
		return apierr.New(apierr.CodeInvalidRequest, "remove member: email: %v", err)
	}
	if err := s.authorize(ctx, p, auth.VerbDelete, "", authz.ObjMembers); err != nil {
		return err
	}
	err = s.st.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		m, err := tx.MemberGet(ctx, email)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(apierr.CodeNotFound, "%s is not a member of tenant %q", email, p.Tenant)
		}
		if err != nil {
			return err
		}
		if m.Owner {
			if err := lastOwner(ctx, tx, p.Tenant, email); err != nil {
				return err
			}
		}
		if err := tx.MemberDelete(ctx, email); err != nil {
			return err
		}
		if err := s.handOver(ctx, tx, p, email); err != nil {
			return err
		}
		return s.unbindAll(ctx, tx, p, email)
	})
	if err != nil {
		return mapErr("remove member "+email, err)
	}
	s.invalidate(p.Tenant)
	return nil
}

// unbindAll deletes the person's RoleBindings in every namespace.
func (s *Service) unbindAll(ctx context.Context, tx store.Tx, p auth.Principal, email string) error {
	name := MemberBindingName(email)
	var keys []resource.Key
	cont := ""
	for {
		page, err := tx.ResourceList(ctx, store.ListParams{Kind: resource.KindRoleBinding, Limit: store.MaxPageSize, Continue: cont})
		if err != nil {
			return fmt.Errorf("list role bindings: %w", err)
		}
		for _, o := range page.Items {
			if o.Metadata.Name == name {
				keys = append(keys, o.Key())
			}
		}
		if page.Continue == "" {
			break
		}
		cont = page.Continue
	}
	t := s.now().UTC()
	for _, k := range keys {
		old, err := tx.ResourceDelete(ctx, k, "")
		if err != nil {
			return fmt.Errorf("delete %s: %w", k, err)
		}
		if err := appliedEvent(ctx, tx, p.Tenant, old, t, p.Subject, "deleted"); err != nil {
			return err
		}
	}
	return nil
}

// Members lists the people of p's tenant, ordered by e-mail. Any credential
// that may list tenant-scope resources may call it.
func (s *Service) Members(ctx context.Context, p auth.Principal) ([]store.Member, error) {
	if err := s.authorize(ctx, p, auth.VerbList, "", authz.ObjMembers); err != nil {
		return nil, err
	}
	var out []store.Member
	err := s.st.View(ctx, p.Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		out, err = r.MemberList(ctx)
		return err
	})
	if err != nil {
		return nil, mapErr("list members", err)
	}
	return out, nil
}

func checkRole(role string) error {
	if !authz.IsNamespaceRole(role) {
		return apierr.New(apierr.CodeInvalidRequest, "role %q is not one of %s (ownership is a member flag, not a role binding)", role, strings.Join(authz.NamespaceRoles(), ", "))
	}
	return nil
}

func namespaceExists(ctx context.Context, r store.Reader, ns string) error {
	_, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindNamespace, Name: ns})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.New(apierr.CodeNotFound, "namespace %q does not exist", ns)
	}
	if err != nil {
		return fmt.Errorf("read namespace %q: %w", ns, err)
	}
	return nil
}

// mapErr keeps *apierr.Error as is and wraps everything else with what was
// being done; the server's error handler turns unknown errors into Internal.
func mapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := apierr.As(err); ok {
		return err
	}
	var fe resource.FieldErrors
	if errors.As(err, &fe) {
		return apierr.New(apierr.CodeInvalidRequest, "%s: %v", what, fe)
	}
	if errors.Is(err, store.ErrConflict) {
		return apierr.New(apierr.CodeConflict, "%s: a concurrent change got there first, retry", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
