package server

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// decodeBody parses a multi-document body; a syntax error is an admission
// diagnostic naming the document, so it reads like every other rejection.
func decodeBody(c *fiber.Ctx) ([]*resource.Object, error) {
	docs, err := resource.DecodeDocuments(c.Body())
	if err == nil {
		return docs, nil
	}
	var de *resource.DocumentError
	if errors.As(err, &de) {
		return nil, apierr.New(apierr.CodeAdmissionRejected, "rejected: %s", de.Message).
			WithDetails(map[string]any{"diagnostics": []api.Diagnostic{{Document: de.Document, Path: de.Path, Code: resource.ErrCodeInvalid, Message: de.Message}}})
	}
	return nil, badRequest("%s", err.Error())
}

func (s *Server) recordBody(c *fiber.Ctx, verb string, docs []*resource.Object) {
	a := auditOf(c)
	a.verb = verb
	names := make([]string, 0, len(docs))
	seen := map[string]bool{}
	for _, d := range docs {
		if !seen[d.Metadata.Namespace] {
			seen[d.Metadata.Namespace] = true
			names = append(names, d.Metadata.Namespace)
		}
	}
	sort.Strings(names)
	if len(names) == 1 {
		a.namespace = names[0]
	}
	if len(docs) == 1 {
		a.resource = docs[0].Key().String()
	} else {
		a.resource = "multi-document body"
	}
}

func (s *Server) handleApply(c *fiber.Ctx) error {
	docs, err := decodeBody(c)
	if err != nil {
		return err
	}
	s.recordBody(c, auth.VerbApply, docs)
	res, err := s.pipeline.Apply(c.UserContext(), principal(c), docs)
	if err != nil {
		return err
	}
	return c.JSON(api.ApplyResult{APIVersion: resource.GroupVersion, Kind: "ApplyResult", Items: res.Items, Manifests: res.Manifests})
}

func (s *Server) handleValidate(c *fiber.Ctx) error {
	docs, err := decodeBody(c)
	if err != nil {
		return err
	}
	s.recordBody(c, "validate", docs)
	res, err := s.pipeline.Validate(c.UserContext(), principal(c), docs)
	if err != nil {
		return err
	}
	return c.JSON(api.ValidationResult{APIVersion: resource.GroupVersion, Kind: "ValidationResult", Valid: true, Items: res.Items})
}

// handleDiff compares each document, after defaulting, with what is stored.
// Secret values are never shown: a changed value reads "(redacted)".
func (s *Server) handleDiff(c *fiber.Ctx) error {
	docs, err := decodeBody(c)
	if err != nil {
		return err
	}
	s.recordBody(c, "diff", docs)
	p := principal(c)
	var diags, refused []api.Diagnostic
	for i, d := range docs {
		resource.Default(d)
		for _, fe := range resource.Validate(d) {
			diags = append(diags, api.Diagnostic{Document: i, Kind: d.Kind, Namespace: d.Metadata.Namespace, Name: d.Metadata.Name, Path: fe.Path, Code: fe.Code, Message: fe.Message})
		}
		plural := d.Kind
		if info, ok := resource.LookupKind(d.Kind); ok {
			plural = info.Plural
		}
		if err := s.authz.Authorize(c.UserContext(), p, auth.VerbGet, d.Metadata.Namespace, plural); err != nil {
			refused = append(refused, api.Diagnostic{Document: i, Kind: d.Kind, Namespace: d.Metadata.Namespace, Name: d.Metadata.Name, Path: "metadata.namespace", Code: resource.ErrCodeForbidden, Message: err.Error()})
		}
	}
	if len(refused) > 0 {
		// Authorization before admission: a refusal is 403, as apply's.
		return apierr.New(apierr.CodeForbidden, "diff refused: document %d (%s %s): %s", refused[0].Document, refused[0].Kind, refused[0].Name, refused[0].Message).
			WithDetails(map[string]any{"diagnostics": refused})
	}
	if len(diags) > 0 {
		return apierr.New(apierr.CodeAdmissionRejected, "diff rejected: %d problem(s), first: document %d: %s: %s", len(diags), diags[0].Document, diags[0].Path, diags[0].Message).
			WithDetails(map[string]any{"diagnostics": diags})
	}
	items := make([]api.DiffItem, len(docs))
	err = s.store.View(c.UserContext(), p.Tenant, func(ctx context.Context, r store.Reader) error {
		for i, d := range docs {
			item := api.DiffItem{Kind: d.Kind, Namespace: d.Metadata.Namespace, Name: d.Metadata.Name, Changes: []resource.FieldChange{}}
			current, err := r.ResourceGet(ctx, d.Key())
			switch {
			case errors.Is(err, store.ErrNotFound):
				item.Action = api.DiffCreate
				item.Changes = resource.Diff(nil, s.redactForDiff(p.Tenant, d, nil))
			case err != nil:
				return err
			default:
				item.Changes = resource.Diff(s.redactForDiff(p.Tenant, current, nil), s.redactForDiff(p.Tenant, d, current))
				item.Action = api.DiffUnchanged
				if len(item.Changes) > 0 {
					item.Action = api.DiffUpdate
				}
			}
			items[i] = item
		}
		return nil
	})
	if err != nil {
		return storeError(err)
	}
	return c.JSON(api.DiffResult{APIVersion: resource.GroupVersion, Kind: "DiffResult", Items: items})
}

// redactForDiff hides Secret values on both sides of a diff. The stored
// side is sealed; each applied value is compared with the stored one by
// opening it here, and shows as "(redacted)" when equal and "(redacted,
// changed)" otherwise. The sealed form and key list are left out.
func (s *Server) redactForDiff(tenant string, o, stored *resource.Object) *resource.Object {
	if o.Kind != resource.KindSecret {
		return o
	}
	c := o.DeepCopy()
	if c.Spec == nil {
		return c
	}
	plain, _ := c.Spec[secret.FieldData].(map[string]any)
	sealed, _ := c.Spec[secret.FieldSealed].(map[string]any)
	var storedSealed map[string]any
	if stored != nil {
		storedSealed, _ = stored.Spec[secret.FieldSealed].(map[string]any)
	}
	delete(c.Spec, secret.FieldSealed)
	delete(c.Spec, secret.FieldKeys)
	red := map[string]any{}
	for k := range sealed {
		red[k] = "(redacted)"
	}
	for k, v := range plain {
		red[k] = "(redacted)"
		if stored == nil {
			continue
		}
		value, _ := v.(string)
		if !s.sameSecretValue(tenant, stored, k, storedSealed[k], value) {
			red[k] = "(redacted, changed)"
		}
	}
	if len(red) > 0 || plain != nil || sealed != nil {
		c.Spec[secret.FieldData] = red
	}
	return c
}

// sameSecretValue reports whether the stored sealed value of key opens to
// value.
func (s *Server) sameSecretValue(tenant string, stored *resource.Object, key string, sealed any, value string) bool {
	str, ok := sealed.(string)
	if !ok {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return false
	}
	plain, err := s.cfg.Keyring.Open(b, secret.SecretContext(tenant, stored.Metadata.Namespace, stored.Metadata.Name, key))
	return err == nil && subtle.ConstantTimeCompare(plain, []byte(value)) == 1
}
