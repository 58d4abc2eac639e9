package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// target is the kind, namespace and name a resource path addresses.
type target struct {
	info resource.KindInfo
	ns   string
	name string
}

func (t target) key() resource.Key {
	return resource.Key{Kind: t.info.Kind, Namespace: t.ns, Name: t.name}
}

func (t target) String() string { return t.key().String() }

// resolveTarget reads the path parameters and checks them against the kind
// catalog: namespaced kinds only under /namespaces/{ns}, tenant-scope kinds
// only at /v1/{plural}.
func resolveTarget(c *fiber.Ctx) (target, error) {
	plural := c.Params("plural")
	info, ok := resource.LookupPath(plural)
	if !ok || info.Plural != plural {
		return target{}, notFound("unknown resource type %q; see docs/resources.md for the kinds", plural)
	}
	ns := c.Params("ns")
	if info.Namespaced && ns == "" {
		return target{}, notFound("%s are namespaced: use /v1/namespaces/{ns}/%s", info.Plural, info.Plural)
	}
	if !info.Namespaced && ns != "" {
		return target{}, notFound("%s are tenant-scoped: use /v1/%s", info.Plural, info.Plural)
	}
	// Path parameters point into a buffer Fiber reuses after the handler;
	// what reaches the store, the bus and the log is a copy.
	return target{info: info, ns: strings.Clone(ns), name: strings.Clone(c.Params("name"))}, nil
}

// authorize checks the verb on the target's kind through the Authorizer and
// records the call for the audit middleware.
func (s *Server) authorize(c *fiber.Ctx, verb string, t target) error {
	a := auditOf(c)
	a.verb, a.namespace = verb, t.ns
	a.resource = t.info.Kind
	if t.name != "" {
		a.resource = t.String()
	}
	return s.check(c, verb, t.ns, t.info.Plural)
}

// check asks the Authorizer about the request's principal; a refusal is
// 403, a failure to decide is 500.
func (s *Server) check(c *fiber.Ctx, verb, ns, object string) error {
	return s.checkPrincipal(c.UserContext(), principal(c), verb, ns, object)
}

// present prepares an object for a response: secret values never leave.
func present(o *resource.Object) *resource.Object {
	if o != nil && o.Kind == resource.KindSecret {
		return resource.RedactSecret(o)
	}
	return o
}

func (s *Server) handleList(c *fiber.Ctx) error {
	t, err := resolveTarget(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, auth.VerbList, t); err != nil {
		return err
	}
	params := store.ListParams{Kind: t.info.Kind, Namespace: t.ns, Continue: c.Query("continue")}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return badRequest("limit must be a non-negative integer, got %q", l)
		}
		params.Limit = min(n, store.MaxPageSize)
	}
	sel, err := parseSelector(c, t.info.Kind)
	if err != nil {
		return err
	}
	params.Selector = sel
	since, err := sinceQuery(c, s.now())
	if err != nil {
		return err
	}
	var res *store.ListResult
	err = s.store.View(c.UserContext(), principal(c).Tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		res, err = r.ResourceList(ctx, params)
		return err
	})
	if err != nil {
		return storeError(err)
	}
	items := make([]*resource.Object, 0, len(res.Items))
	for _, o := range res.Items {
		if createdBefore(o, since) {
			continue
		}
		items = append(items, present(o))
	}
	return c.JSON(api.List{
		APIVersion: t.info.APIVersion, Kind: t.info.Kind + "List",
		Metadata: api.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue},
		Items:    items,
	})
}

// parseSelector combines labelSelector (alias selector), fieldSelector
// and the filters of the kind (listFilters).
func parseSelector(c *fiber.Ctx, kind string) (*resource.Selector, error) {
	var parts []string
	for _, q := range []string{"labelSelector", "selector", "fieldSelector"} {
		if v := strings.TrimSpace(c.Query(q)); v != "" {
			// A watch keeps its selector after the handler returns,
			// when Fiber reuses the query's buffer.
			parts = append(parts, strings.Clone(v))
		}
	}
	for q, field := range listFilters[kind] {
		if v := strings.TrimSpace(c.Query(q)); v != "" {
			if strings.ContainsAny(v, ",=!()") {
				return nil, badRequest("filter %s=%q: the value must be a plain name", q, v)
			}
			parts = append(parts, field+"="+v) // a new string
		}
	}
	sel, err := resource.ParseSelector(strings.Join(parts, ","))
	if err != nil {
		return nil, badRequest("invalid selector: %s", err.Error())
	}
	return sel, nil
}

func (s *Server) handleGet(c *fiber.Ctx) error {
	t, err := resolveTarget(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, auth.VerbGet, t); err != nil {
		return err
	}
	obj, err := s.get(c.UserContext(), principal(c).Tenant, t)
	if err != nil {
		return err
	}
	return c.JSON(present(obj))
}

func (s *Server) get(ctx context.Context, tenant string, t target) (*resource.Object, error) {
	var obj *resource.Object
	err := s.store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		obj, err = r.ResourceGet(ctx, t.key())
		return err
	})
	if err != nil {
		return nil, storeErrorFor(err, t)
	}
	return obj, nil
}

// refuseSystemOnly stops user writes to kinds only Warden writes.
func refuseSystemOnly(c *fiber.Ctx, t target, what string) error {
	if t.info.SystemOnly && !principal(c).System {
		return apierr.New(apierr.CodeForbidden, "%s records are written by Warden itself; %s is refused", t.info.Kind, what)
	}
	return nil
}

// handlePatch applies a JSON merge patch (RFC 7386) to spec, labels and
// annotations, then runs the result through the apply pipeline, so a patched
// agent is admitted and recompiled exactly like an applied one.
func (s *Server) handlePatch(c *fiber.Ctx) error {
	t, err := resolveTarget(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, auth.VerbPatch, t); err != nil {
		return err
	}
	if err := refuseSystemOnly(c, t, "PATCH"); err != nil {
		return err
	}
	var patch map[string]any
	if err := json.Unmarshal(c.Body(), &patch); err != nil {
		return badRequest("the body must be a JSON merge patch object: %s", err.Error())
	}
	for k := range patch {
		switch k {
		case "spec", "metadata":
		case "status":
			return apierr.New(apierr.CodeAdmissionRejected, "status is a subresource: PATCH changes spec only").
				WithDetails(map[string]any{"diagnostics": []map[string]any{{"document": 0, "kind": t.info.Kind, "name": t.name, "path": "status", "code": resource.ErrCodeForbidden, "message": "status is written through PUT …/status"}}})
		default:
			return badRequest("PATCH may change spec, metadata.labels and metadata.annotations; %q is not patchable", k)
		}
	}
	p := principal(c)
	current, err := s.get(c.UserContext(), p.Tenant, t)
	if err != nil {
		return err
	}
	if current.Kind == resource.KindSecret {
		// The stored Secret holds sealed values, which apply refuses from
		// a client: patch its values in the clear, as apply takes them,
		// and let apply seal them again.
		if current, err = s.openSecret(p.Tenant, current); err != nil {
			return err
		}
	}
	next, err := mergePatch(current, patch)
	if err != nil {
		return err
	}
	if _, err := s.pipeline.Apply(c.UserContext(), p, []*resource.Object{next}); err != nil {
		return err
	}
	updated, err := s.get(c.UserContext(), p.Tenant, t)
	if err != nil {
		return err
	}
	return c.JSON(present(updated))
}

// openSecret returns a copy of a stored Secret whose spec holds its values
// in spec.data instead of spec.sealed and spec.keys.
func (s *Server) openSecret(tenant string, o *resource.Object) (*resource.Object, error) {
	data, err := secret.OpenSecretData(s.cfg.Keyring, tenant, o)
	if err != nil {
		return nil, fmt.Errorf("open secret for patch: %w", err)
	}
	open := o.DeepCopy()
	delete(open.Spec, secret.FieldSealed)
	delete(open.Spec, secret.FieldKeys)
	open.Spec[secret.FieldData] = data
	return open, nil
}

func mergePatch(current *resource.Object, patch map[string]any) (*resource.Object, error) {
	next := current.DeepCopy()
	next.Status = nil
	if spec, ok := patch["spec"]; ok {
		if spec == nil {
			return nil, badRequest("spec cannot be removed")
		}
		sm, ok := spec.(map[string]any)
		if !ok {
			return nil, badRequest("spec must be an object")
		}
		next.Spec = mergeObject(next.Spec, sm)
	}
	if meta, ok := patch["metadata"]; ok {
		mm, ok := meta.(map[string]any)
		if !ok {
			return nil, badRequest("metadata must be an object")
		}
		for k, v := range mm {
			switch k {
			case "labels":
				l, err := patchStrings(next.Metadata.Labels, v, "metadata.labels")
				if err != nil {
					return nil, err
				}
				next.Metadata.Labels = l
			case "annotations":
				a, err := patchStrings(next.Metadata.Annotations, v, "metadata.annotations")
				if err != nil {
					return nil, err
				}
				next.Metadata.Annotations = a
			case "resourceVersion":
				rv, ok := v.(string)
				if !ok {
					return nil, badRequest("metadata.resourceVersion must be a string")
				}
				next.Metadata.ResourceVersion = rv
			default:
				return nil, badRequest("metadata.%s is not patchable", k)
			}
		}
	}
	return next, nil
}

// mergeObject is RFC 7386 for objects: null removes, objects merge, anything
// else replaces.
func mergeObject(target, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, v := range patch {
		if v == nil {
			delete(target, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			tm, _ := target[k].(map[string]any)
			target[k] = mergeObject(tm, pm)
			continue
		}
		target[k] = v
	}
	return target
}

func patchStrings(cur map[string]string, v any, path string) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("%s must be an object", path)
	}
	out := map[string]string{}
	for k, s := range cur {
		out[k] = s
	}
	for k, val := range m {
		switch t := val.(type) {
		case nil:
			delete(out, k)
		case string:
			out[k] = t
		default:
			return nil, badRequest("%s.%s must be a string", path, k)
		}
	}
	return out, nil
}

func (s *Server) handleDelete(c *fiber.Ctx) error {
	t, err := resolveTarget(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, auth.VerbDelete, t); err != nil {
		return err
	}
	if err := refuseSystemOnly(c, t, "DELETE"); err != nil {
		return err
	}
	var deleted *resource.Object
	err = s.store.Update(c.UserContext(), principal(c).Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		if deleted, err = tx.ResourceDelete(ctx, t.key(), c.Query("resourceVersion")); err != nil {
			return err
		}
		return purgeItems(ctx, tx, deleted)
	})
	if err != nil {
		return storeErrorFor(err, t)
	}
	if t.info.Kind == resource.KindRoleBinding || t.info.Kind == resource.KindTenant {
		s.authz.Invalidate(principal(c).Tenant)
	}
	return c.JSON(present(deleted))
}

// purgeItems deletes, in the transaction that deletes o, the rows o kept
// outside the resource table: a Memory's items, a RAGIndex's documents,
// chunks and terms. A resource of the same name created later starts
// empty.
func purgeItems(ctx context.Context, tx store.Tx, o *resource.Object) error {
	switch o.Kind {
	case resource.KindMemory:
		if _, err := tx.MemoryPurge(ctx, o.Metadata.Namespace, o.Metadata.Name); err != nil {
			return fmt.Errorf("delete the items of memory %s: %w", o.Metadata.Name, err)
		}
	case resource.KindRAGIndex:
		if err := tx.RAGIndexPurge(ctx, o.Metadata.Namespace, o.Metadata.Name); err != nil {
			return fmt.Errorf("delete the documents of RAG index %s: %w", o.Metadata.Name, err)
		}
	}
	return nil
}

// handlePutStatus writes the status subresource. Kinds only Warden writes
// refuse it, so nobody approves a call by editing its status.
func (s *Server) handlePutStatus(c *fiber.Ctx) error {
	t, err := resolveTarget(c)
	if err != nil {
		return err
	}
	if err := s.authorize(c, auth.VerbWriteStatus, t); err != nil {
		return err
	}
	if err := refuseSystemOnly(c, t, "writing status"); err != nil {
		return err
	}
	var body struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(c.Body(), &body); err != nil {
		return badRequest("the body must be the resource with its status: %s", err.Error())
	}
	if body.Status == nil {
		return badRequest("the body has no status object")
	}
	var updated *resource.Object
	err = s.store.Update(c.UserContext(), principal(c).Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		updated, err = tx.ResourceUpdateStatus(ctx, t.key(), body.Status, body.Metadata.ResourceVersion)
		return err
	})
	if err != nil {
		return storeErrorFor(err, t)
	}
	return c.JSON(present(updated))
}
