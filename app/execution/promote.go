package execution

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Applier is the apply pipeline (app/apply's Pipeline).
type Applier interface {
	Apply(ctx context.Context, pr auth.Principal, docs []*resource.Object) (*apply.Result, error)
}

// PromoteRequest is the body of POST /v1/promote.
type PromoteRequest struct {
	Agent string `json:"agent"`
	// Namespace is the agent's; default the credential's, else "default".
	Namespace string `json:"namespace,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// PromoteResult answers a promotion.
type PromoteResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Agent      string `json:"agent"`
	Namespace  string `json:"namespace"`
	From       string `json:"from"`
	To         string `json:"to"`
	// Deployment is the Deployment of the agent to To, created or updated.
	Deployment string `json:"deployment"`
	// Manifest is the compiled manifest promoted, "<agent>-g<generation>".
	Manifest string `json:"manifest"`
	// Items are the apply pipeline's items.
	Items []api.ApplyItem `json:"items"`
}

// Promotion annotations of a promoted Deployment.
const (
	AnnotationPromotedFrom     = "warden.dev/promoted-from"
	AnnotationPromotedManifest = "warden.dev/promoted-manifest"
)

// tierOrder is the default promotion path of Environment tiers.
var tierOrder = []string{"dev", "staging", "prod"}

// Promote moves an agent deployed to req.From on to req.To by creating or
// updating its Deployment to req.To through the apply pipeline, as p: the
// same authorization, admission and policy preflight as any apply, so a
// model or tool denied in req.To answers PolicyDenied with the pipeline's
// diagnostics and nothing is written. req.To must be the environment
// req.From promotes to: its Environment's spec.promotesTo, else the next
// tier of dev → staging → prod.
func (s *Service) Promote(ctx context.Context, applier Applier, p auth.Principal, req PromoteRequest) (*PromoteResult, error) {
	if req.Agent == "" || req.From == "" || req.To == "" {
		return nil, fmt.Errorf("%w: agent, from and to are required", ErrInvalid)
	}
	if req.From == req.To {
		return nil, fmt.Errorf("%w: from and to are both %q", ErrInvalid, req.From)
	}
	ns := req.Namespace
	var source, target *resource.Object
	var manifest string
	err := s.cfg.Store.View(ctx, p.Tenant, func(ctx context.Context, tx store.Reader) error {
		a, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindAgent, Namespace: ns, Name: req.Agent})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: agent %q in namespace %q", ErrNotFound, req.Agent, ns)
		}
		if err != nil {
			return err
		}
		st, _ := resource.DecodeStatus[resource.AgentStatus](a)
		if st.CompiledManifest == "" {
			return fmt.Errorf("%w: agent %q has no compiled manifest to promote", ErrConflict, req.Agent)
		}
		manifest = st.CompiledManifest
		next, err := promotesTo(ctx, tx, ns, req.From)
		if err != nil {
			return err
		}
		if next != req.To {
			if next == "" {
				return fmt.Errorf("%w: environment %q promotes to no other environment", ErrInvalid, req.From)
			}
			return fmt.Errorf("%w: environment %q promotes to %q, not %q", ErrInvalid, req.From, next, req.To)
		}
		deps, err := deploymentsOf(ctx, tx, ns, req.Agent)
		if err != nil {
			return err
		}
		for _, d := range deps {
			ds, _ := resource.DecodeSpec[resource.DeploymentSpec](d)
			switch ds.Environment {
			case req.From:
				source = d
			case req.To:
				target = d
			}
		}
		if source == nil {
			return fmt.Errorf("%w: agent %q is not deployed to %q in namespace %q", ErrConflict, req.Agent, req.From, ns)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	doc := promoted(source, target, req, manifest)
	res, err := applier.Apply(ctx, p, []*resource.Object{doc})
	if err != nil {
		return nil, policyDenied(err, req)
	}
	return &PromoteResult{APIVersion: resource.GroupVersion, Kind: "PromoteResult", Agent: req.Agent, Namespace: ns,
		From: req.From, To: req.To, Deployment: doc.Metadata.Name, Manifest: manifest, Items: res.Items}, nil
}

// promoted is the Deployment to apply: the target's, updated, or a new
// one named "<agent>-<to>" with the source's runtime and replicas.
func promoted(source, target *resource.Object, req PromoteRequest, manifest string) *resource.Object {
	base := source
	name := req.Agent + "-" + req.To
	var labels map[string]string
	if target != nil {
		base, name, labels = target, target.Metadata.Name, target.Metadata.Labels
	}
	spec := map[string]any{}
	for k, v := range base.Spec {
		spec[k] = v
	}
	spec["agentRef"] = map[string]any{"name": req.Agent}
	spec["environment"] = req.To
	ann := map[string]string{}
	if target != nil {
		for k, v := range target.Metadata.Annotations {
			ann[k] = v
		}
	}
	ann[AnnotationPromotedFrom] = req.From
	ann[AnnotationPromotedManifest] = manifest
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindDeployment,
		Metadata: resource.ObjectMeta{Name: name, Namespace: req.Namespace, Labels: labels, Annotations: ann}, Spec: spec}
}

// promotesTo is the environment env promotes to: its spec.promotesTo, else
// the next tier ("" after prod).
func promotesTo(ctx context.Context, tx store.Reader, ns, env string) (string, error) {
	tier := env
	o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindEnvironment, Namespace: ns, Name: env})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("%w: environment %q in namespace %q", ErrNotFound, env, ns)
	case err != nil:
		return "", err
	}
	es, _ := resource.DecodeSpec[resource.EnvironmentSpec](o)
	if es.PromotesTo != "" {
		return es.PromotesTo, nil
	}
	if es.Tier != "" {
		tier = es.Tier
	}
	i := slices.Index(tierOrder, tier)
	if i < 0 || i == len(tierOrder)-1 {
		return "", nil
	}
	return tierOrder[i+1], nil
}

var ruleOf = regexp.MustCompile(`\(rule ([^)]+)\)`)

// policyDenied turns an admission rejection caused by policy preflight
// into PolicyDenied (SPEC.md's code), keeping every diagnostic; other
// errors pass unchanged.
func policyDenied(err error, req PromoteRequest) error {
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.CodeAdmissionRejected {
		return err
	}
	diags, _ := e.Details["diagnostics"].([]api.Diagnostic)
	for _, d := range diags {
		if d.Code != resource.ErrCodePolicyDenied {
			continue
		}
		id, version, _ := strings.Cut(d.Policy, "@")
		rule := ""
		if m := ruleOf.FindStringSubmatch(d.Message); m != nil {
			rule = m[1]
		}
		return apierr.New(apierr.CodePolicyDenied, "promotion of agent %s from %s to %s denied by policy %s at hook preflight: %s",
			req.Agent, req.From, req.To, d.Policy, d.Message).
			WithDetails(map[string]any{"policyId": id, "policyVersion": version, "rule": rule, "diagnostics": diags})
	}
	return err
}
