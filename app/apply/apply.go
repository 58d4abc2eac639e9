package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warden-dev/warden/app/adapter"
	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// Result is the outcome of an apply or a validation.
type Result struct {
	Items []api.ApplyItem `json:"items"`
	// Manifests names the compiled manifests written or refreshed.
	Manifests []string `json:"manifests"`
}

// Authorizer decides whether a principal may perform a verb on a kind's
// plural in a namespace ("" for tenant scope); app/authz implements it.
type Authorizer interface {
	Authorize(ctx context.Context, p auth.Principal, verb, namespace, object string) error
}

// systemOnly is the Authorizer of a pipeline built without one: it fails
// closed, allowing Warden's own principal and nobody else (app/authz is
// the only place that decides for callers).
type systemOnly struct{}

func (systemOnly) Authorize(_ context.Context, p auth.Principal, verb, namespace, object string) error {
	if p.System {
		return nil
	}
	return fmt.Errorf("%w: %s may not %s %s in namespace %q: the apply pipeline has no authorizer", auth.ErrForbidden, p.Subject, verb, object, namespace)
}

// Pipeline runs applies. Build it with New.
type Pipeline struct {
	authz    Authorizer
	keyring  *secret.Keyring
	policies *policy.Engine
	store    store.Store
	compiler *compile.Compiler
	adapters *adapter.Registry
	bus      *events.Bus
	log      *slog.Logger
	now      func() time.Time
}

// Deps are the pipeline's collaborators.
type Deps struct {
	Store    store.Store
	Compiler *compile.Compiler
	Adapters *adapter.Registry
	Bus      *events.Bus
	Logger   *slog.Logger
	Now      func() time.Time
	// Authorizer (app/authz) checks the apply verb per document; nil
	// allows only the system principal.
	Authorizer Authorizer
	// Keyring seals Secret values before they are stored. Without one the
	// pipeline refuses Secrets rather than store them in the clear.
	Keyring *secret.Keyring
	// Policies checks the CEL of applied Policy documents; pass the
	// compiler's engine so programs are compiled once. nil means a private
	// engine.
	Policies *policy.Engine
}

// New returns a pipeline.
func New(d Deps) *Pipeline {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Bus == nil {
		d.Bus = events.NewBus()
	}
	if d.Authorizer == nil {
		d.Authorizer = systemOnly{}
	}
	if d.Policies == nil {
		d.Policies = policy.NewEngine()
	}
	return &Pipeline{authz: d.Authorizer, keyring: d.Keyring, policies: d.Policies, store: d.Store, compiler: d.Compiler, adapters: d.Adapters, bus: d.Bus, log: d.Logger, now: d.Now}
}

// Apply admits, stores, reconciles and compiles docs for principal p, all or
// nothing. A rejected body answers an *apierr.Error with code
// AdmissionRejected and every diagnostic.
func (p *Pipeline) Apply(ctx context.Context, pr auth.Principal, docs []*resource.Object) (*Result, error) {
	return p.run(ctx, pr, docs, false)
}

// Validate runs admission, reconcile and compile exactly as Apply does and
// writes nothing.
func (p *Pipeline) Validate(ctx context.Context, pr auth.Principal, docs []*resource.Object) (*Result, error) {
	return p.run(ctx, pr, docs, true)
}

func (p *Pipeline) run(ctx context.Context, pr auth.Principal, docs []*resource.Object, validateOnly bool) (*Result, error) {
	if len(docs) == 0 {
		return nil, apierr.New(apierr.CodeInvalidRequest, "the body holds no documents")
	}
	refused, diags := p.admit(ctx, pr, docs)
	if len(refused) > 0 {
		// Authorization comes before admission: a refusal to act is 403,
		// not an admission result.
		return nil, forbidden(refused)
	}
	if len(diags) > 0 {
		return nil, rejected(diags)
	}

	res := &Result{Items: make([]api.ApplyItem, len(docs)), Manifests: []string{}}
	var pending []events.Event
	var handOver []*resource.Object
	now := p.now().UTC()

	err := p.store.Update(ctx, pr.Tenant, func(ctx context.Context, tx store.Tx) error {
		pending = pending[:0]
		handOver = handOver[:0]
		applied := make([]*resource.Object, len(docs))
		for i, doc := range docs {
			stored, action, err := p.write(ctx, tx, pr.Tenant, doc)
			if err != nil {
				return &documentError{index: i, kind: doc.Kind, name: doc.Metadata.Name, err: err}
			}
			applied[i] = stored
			res.Items[i] = api.ApplyItem{
				Kind: stored.Kind, Namespace: stored.Metadata.Namespace, Name: stored.Metadata.Name,
				Action: action, ResourceVersion: stored.Metadata.ResourceVersion, Generation: stored.Metadata.Generation,
			}
			if action != api.ActionUnchanged {
				pending = append(pending, events.Event{
					Type: events.ResourceApplied, Time: now, Tenant: pr.Tenant, Namespace: stored.Metadata.Namespace,
					Subject: stored.Kind + "/" + stored.Metadata.Name,
					Data:    map[string]any{"action": action, "generation": stored.Metadata.Generation, "resourceVersion": stored.Metadata.ResourceVersion, "actor": pr.Subject},
				})
			}
		}

		if diags, err := checkNamespaces(ctx, tx, applied); err != nil || len(diags) > 0 {
			if err != nil {
				return err
			}
			return rejected(diags)
		}
		manifests, diags, err := p.compiler.Reconcile(ctx, tx, applied)
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		if len(diags) > 0 {
			return rejected(diags)
		}
		for _, m := range manifests {
			written, changed, err := p.writeManifest(ctx, tx, pr.Tenant, m)
			if err != nil {
				return fmt.Errorf("store manifest %s: %w", m.Metadata.Name, err)
			}
			res.Manifests = append(res.Manifests, written.Metadata.Name)
			if err := markCompiled(ctx, tx, written, now); err != nil {
				return err
			}
			if changed {
				handOver = append(handOver, written)
				pending = append(pending, events.Event{
					Type: events.AgentCompiled, Time: now, Tenant: pr.Tenant, Namespace: written.Metadata.Namespace,
					Subject: resource.KindAgent + "/" + agentName(written),
					Data:    map[string]any{"manifest": written.Metadata.Name, "resourceVersion": written.Metadata.ResourceVersion},
				})
			}
		}
		if validateOnly {
			return errValidateOnly
		}
		for i := range pending {
			ev, err := tx.EventInsert(ctx, pending[i])
			if err != nil {
				return fmt.Errorf("record event %s: %w", pending[i].Type, err)
			}
			pending[i] = ev
		}
		return nil
	})

	if validateOnly && errors.Is(err, errValidateOnly) {
		p.recordValidated(ctx, pr, docs, now)
		for i := range res.Items {
			res.Items[i].Action, res.Items[i].ResourceVersion, res.Items[i].Generation = "", "", 0
		}
		return res, nil
	}
	if err != nil {
		return nil, mapStoreError(err)
	}
	for _, ev := range pending {
		p.bus.Publish(ev)
	}
	p.handOver(ctx, handOver)
	return res, nil
}

// admit defaults and checks every document without touching the store, and
// refuses system-only kinds and documents outside the caller's scope.
func (p *Pipeline) admit(ctx context.Context, pr auth.Principal, docs []*resource.Object) (refused, diags []api.Diagnostic) {
	for i, doc := range docs {
		// status is a subresource: a body may carry it (a read-back being
		// re-applied), but apply never writes it.
		doc.Status = nil
		resource.Default(doc)
		add := func(path, code, msg string) {
			diags = append(diags, api.Diagnostic{Document: i, Kind: doc.Kind, Namespace: doc.Metadata.Namespace, Name: doc.Metadata.Name, Path: path, Code: code, Message: msg})
		}
		refuse := func(path, msg string) {
			refused = append(refused, api.Diagnostic{Document: i, Kind: doc.Kind, Namespace: doc.Metadata.Namespace, Name: doc.Metadata.Name, Path: path, Code: resource.ErrCodeForbidden, Message: msg})
		}
		for _, fe := range resource.Validate(doc) {
			add(fe.Path, fe.Code, fe.Message)
		}
		info, ok := resource.LookupKind(doc.Kind)
		if !ok {
			continue
		}
		if info.SystemOnly && !pr.System {
			refuse("kind", fmt.Sprintf("%s records are written by Warden itself and cannot be applied", doc.Kind))
			continue
		}
		if err := p.authz.Authorize(ctx, pr, auth.VerbApply, doc.Metadata.Namespace, info.Plural); err != nil {
			refuse("metadata.namespace", err.Error())
		}
		if doc.Kind == resource.KindPolicy {
			for _, fe := range p.policies.Check(doc) {
				add(fe.Path, fe.Code, fe.Message)
			}
		}
		if doc.Kind == resource.KindSecret {
			if _, ok := doc.Spec[secret.FieldSealed]; ok && !pr.System {
				add("spec.sealed", resource.ErrCodeForbidden, "spec.sealed is written by Warden: give the values in spec.data")
			}
			if p.keyring == nil {
				add("kind", resource.ErrCodeForbidden, "this server has no master key, so it cannot store Secrets")
			}
		}
	}
	return refused, diags
}

// write stores one document: create, update, or leave unchanged. Secret
// values are sealed first, reusing stored ciphertext for unchanged values.
func (p *Pipeline) write(ctx context.Context, tx store.Tx, tenant string, doc *resource.Object) (*resource.Object, string, error) {
	current, err := tx.ResourceGet(ctx, doc.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, "", err
	}
	if doc.Kind == resource.KindSecret {
		if err := secret.SealSecretUpdate(p.keyring, tenant, doc, current); err != nil {
			return nil, "", err
		}
	}
	if current == nil {
		if doc.Metadata.ResourceVersion != "" {
			return nil, "", fmt.Errorf("%w: resourceVersion given for an object that does not exist", store.ErrConflict)
		}
		created, err := tx.ResourceCreate(ctx, doc)
		return created, api.ActionCreated, err
	}
	updated, err := tx.ResourceUpdate(ctx, doc)
	if err != nil {
		return nil, "", err
	}
	if updated.Metadata.ResourceVersion == current.Metadata.ResourceVersion {
		return updated, api.ActionUnchanged, nil
	}
	return updated, api.ActionConfigured, nil
}

// writeManifest stores a compiled manifest and reports whether it changed.
func (p *Pipeline) writeManifest(ctx context.Context, tx store.Tx, tenant string, m *resource.Object) (*resource.Object, bool, error) {
	stored, action, err := p.write(ctx, tx, tenant, m)
	if err != nil {
		return nil, false, err
	}
	return stored, action != api.ActionUnchanged, nil
}

// markCompiled records the newest manifest in the agent's status.
func markCompiled(ctx context.Context, tx store.Tx, manifest *resource.Object, now time.Time) error {
	key := resource.Key{Kind: resource.KindAgent, Namespace: manifest.Metadata.Namespace, Name: agentName(manifest)}
	agent, err := tx.ResourceGet(ctx, key)
	if err != nil {
		return fmt.Errorf("read agent %s: %w", key.Name, err)
	}
	status := agent.Status
	if status == nil {
		status = map[string]any{}
	}
	if status["compiledManifest"] == manifest.Metadata.Name && toInt64(status["observedGeneration"]) == agent.Metadata.Generation {
		return nil
	}
	status["compiledManifest"] = manifest.Metadata.Name
	status["observedGeneration"] = agent.Metadata.Generation
	status["conditions"] = []any{map[string]any{
		"type": "Compiled", "status": "True", "reason": "ManifestCompiled",
		"message":            "compiled to " + manifest.Metadata.Name,
		"lastTransitionTime": now.Format(time.RFC3339),
	}}
	if _, err := tx.ResourceUpdateStatus(ctx, key, status, ""); err != nil {
		return fmt.Errorf("update agent %s status: %w", key.Name, err)
	}
	return nil
}

func (p *Pipeline) recordValidated(ctx context.Context, pr auth.Principal, docs []*resource.Object, now time.Time) {
	names := make([]any, len(docs))
	for i, d := range docs {
		names[i] = d.Kind + "/" + d.Metadata.Name
	}
	ev := events.Event{Type: events.ResourceValidated, Time: now, Tenant: pr.Tenant, Data: map[string]any{"documents": names, "actor": pr.Subject}}
	err := p.store.Update(ctx, pr.Tenant, func(ctx context.Context, tx store.Tx) error {
		var err error
		ev, err = tx.EventInsert(ctx, ev)
		return err
	})
	if err != nil {
		p.log.WarnContext(ctx, "record ResourceValidated event", "err", err)
		return
	}
	p.bus.Publish(ev)
}

func (p *Pipeline) handOver(ctx context.Context, manifests []*resource.Object) {
	if p.adapters == nil {
		return
	}
	for _, m := range manifests {
		if err := p.adapters.HandOver(ctx, m); err != nil {
			p.log.WarnContext(ctx, "hand-over to runtime adapter failed", "manifest", m.Metadata.Name, "err", err)
		}
	}
}

func agentName(manifest *resource.Object) string {
	if a, ok := manifest.Spec["agent"].(map[string]any); ok {
		if n, ok := a["name"].(string); ok {
			return n
		}
	}
	return ""
}

func toInt64(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case int:
		return int64(t)
	case float64:
		return int64(t)
	}
	return 0
}

// mapStoreError turns store sentinels into API errors; an *apierr.Error
// passes through unchanged.
func mapStoreError(err error) error {
	if e, ok := apierr.As(err); ok {
		return e
	}
	where := "apply"
	var de *documentError
	if errors.As(err, &de) {
		where = de.where()
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		return apierr.New(apierr.CodeConflict, "%s: the object was modified since the resourceVersion you sent; read it again and retry", where)
	case errors.Is(err, store.ErrNotFound):
		return apierr.New(apierr.CodeNotFound, "%s: not found", where)
	case errors.Is(err, store.ErrAlreadyExists):
		return apierr.New(apierr.CodeConflict, "%s: already exists", where)
	}
	return err
}

// checkNamespaces requires every namespaced document's namespace to exist,
// in the store or earlier in the same body.
func checkNamespaces(ctx context.Context, tx store.Tx, applied []*resource.Object) ([]api.Diagnostic, error) {
	exists := map[string]bool{}
	var diags []api.Diagnostic
	for i, o := range applied {
		ns := o.Metadata.Namespace
		if ns == "" {
			continue
		}
		ok, seen := exists[ns]
		if !seen {
			_, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindNamespace, Name: ns})
			switch {
			case err == nil:
				ok = true
			case errors.Is(err, store.ErrNotFound):
			default:
				return nil, fmt.Errorf("look up namespace %s: %w", ns, err)
			}
			exists[ns] = ok
		}
		if !ok {
			diags = append(diags, api.Diagnostic{Document: i, Kind: o.Kind, Namespace: ns, Name: o.Metadata.Name,
				Path: "metadata.namespace", Code: resource.ErrCodeNotFound,
				Message: fmt.Sprintf("namespace %q does not exist; create it first (kind: Namespace)", ns)})
		}
	}
	return diags, nil
}

// documentError is a store failure while writing one document of a body. Its
// where() names the document without the driver's detail, for API errors.
type documentError struct {
	index      int
	kind, name string
	err        error
}

func (e *documentError) where() string {
	return fmt.Sprintf("document %d (%s %s)", e.index, e.kind, e.name)
}

func (e *documentError) Error() string { return e.where() + ": " + e.err.Error() }
func (e *documentError) Unwrap() error { return e.err }
