package compile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// affected is an agent an apply touches, and the applied document that
// made it so.
type affected struct {
	agent   *resource.Object
	trigger int
	// onlyDeployments is true when nothing but applied Deployments touch
	// the agent: then its other environments cannot have changed, and
	// preflight judges only the environments those Deployments target.
	onlyDeployments bool
}

// Reconcile compiles every agent the applied documents affect and runs
// policy preflight for each environment the agent is deployed to. applied
// are the documents of one apply as they now stand inside the apply's
// transaction (r reads through that transaction); an api.Diagnostic's Document
// is an index into applied.
//
// Affected agents are the applied Agents, the agents of applied
// Deployments, and every agent that references an applied Model, Tool,
// MCPServer, Memory, RAGIndex or Policy (or that an applied Policy's
// selector binds, or whose RAG index embeds with an applied Model). It returns the manifests, sorted by namespace and name, only
// when there are no diagnostics. The error is only for store failures.
func (c *Compiler) Reconcile(ctx context.Context, r store.Reader, applied []*resource.Object) ([]*resource.Object, []api.Diagnostic, error) {
	rc := &reconcile{c: c, res: newResolver(r), applied: applied, index: map[resource.Key]int{}}
	for i, o := range applied {
		rc.index[o.Key()] = i
	}
	if err := rc.run(ctx); err != nil {
		return nil, nil, err
	}
	if len(rc.diags) > 0 {
		slices.SortStableFunc(rc.diags, func(a, b api.Diagnostic) int { return a.Document - b.Document })
		return nil, rc.diags, nil
	}
	slices.SortFunc(rc.manifests, func(a, b *resource.Object) int {
		return strings.Compare(a.Metadata.Namespace+"/"+a.Metadata.Name, b.Metadata.Namespace+"/"+b.Metadata.Name)
	})
	return rc.manifests, nil, nil
}

type reconcile struct {
	c       *Compiler
	res     *resolver
	applied []*resource.Object
	index   map[resource.Key]int
	set     *policy.Set
	// broken are the applied policies (namespace/name) whose CEL did not
	// compile; they are reported once at their rules, not again as a
	// fail-closed deny of every agent they bind.
	broken map[string]bool
	// specs caches decoded agent specs by key: an apply of many
	// documents asks about the same agents once per document.
	specs     map[resource.Key]*resource.AgentSpec
	diags     []api.Diagnostic
	manifests []*resource.Object
}

func (rc *reconcile) diag(doc int, path, code, msg, pol string) {
	o := rc.applied[doc]
	rc.diags = append(rc.diags, api.Diagnostic{Document: doc, Kind: o.Kind, Namespace: o.Metadata.Namespace,
		Name: o.Metadata.Name, Path: path, Code: code, Message: msg, Policy: pol})
}

func (rc *reconcile) run(ctx context.Context) error {
	// Policy CEL first: a broken rule is reported at its own path.
	rc.broken = map[string]bool{}
	for i, o := range rc.applied {
		if o.Kind == resource.KindPolicy {
			for _, fe := range rc.c.engine.Check(o) {
				rc.broken[o.Metadata.Namespace+"/"+o.Metadata.Name] = true
				rc.diag(i, fe.Path, fe.Code, fmt.Sprintf("policy %s: %s", o.Metadata.Name, fe.Message), "")
			}
		}
	}
	set, err := rc.c.policySet(ctx, rc.res)
	if err != nil {
		return err
	}
	rc.set = set

	agents, err := rc.affectedAgents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if err := rc.agent(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// affectedAgents returns the agents the apply touches, sorted by
// namespace and name, each with the first applied document that touched it.
func (rc *reconcile) affectedAgents(ctx context.Context) ([]affected, error) {
	found := map[resource.Key]affected{}
	note := func(agent *resource.Object, doc int) {
		k := agent.Key()
		viaDeployment := rc.applied[doc].Kind == resource.KindDeployment
		prev, ok := found[k]
		if !ok {
			found[k] = affected{agent: agent, trigger: doc, onlyDeployments: viaDeployment}
			return
		}
		prev.onlyDeployments = prev.onlyDeployments && viaDeployment
		if doc < prev.trigger {
			prev.trigger = doc
		}
		found[k] = prev
	}
	for i, o := range rc.applied {
		ns := o.Metadata.Namespace
		switch o.Kind {
		case resource.KindAgent:
			note(o, i)
		case resource.KindDeployment:
			ds, err := resource.DecodeSpec[resource.DeploymentSpec](o)
			if err != nil {
				rc.diag(i, "spec", resource.ErrCodeInvalid, err.Error(), "")
				continue
			}
			if err := rc.checkEnvironment(ctx, i, ds.Environment); err != nil {
				return nil, err
			}
			agent, err := rc.res.get(ctx, resource.KindAgent, ns, ds.AgentRef.Name)
			if err != nil {
				return nil, err
			}
			if agent == nil {
				rc.diag(i, "spec.agentRef.name", resource.ErrCodeNotFound,
					fmt.Sprintf("deployment %s deploys agent %q, but no Agent %q exists in namespace %s", o.Metadata.Name, ds.AgentRef.Name, ds.AgentRef.Name, ns), "")
				continue
			}
			note(agent, i)
		case resource.KindModel, resource.KindTool, resource.KindMCPServer, resource.KindMemory, resource.KindRAGIndex, resource.KindPolicy:
			namespaces := []string{ns}
			if o.Kind == resource.KindPolicy {
				namespaces = policyNamespaces(o)
			}
			for _, lns := range namespaces {
				agents, err := rc.res.list(ctx, resource.KindAgent, lns)
				if err != nil {
					return nil, err
				}
				for _, a := range agents {
					spec := rc.agentSpec(a)
					if spec == nil {
						continue
					}
					embeds, err := rc.embedsWith(ctx, a, spec, o)
					if err != nil {
						return nil, err
					}
					if embeds || references(a, spec, o) {
						note(a, i)
					}
				}
			}
		}
	}
	out := make([]affected, 0, len(found))
	for _, a := range found {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b affected) int {
		return strings.Compare(a.agent.Metadata.Namespace+"/"+a.agent.Metadata.Name, b.agent.Metadata.Namespace+"/"+b.agent.Metadata.Name)
	})
	return out, nil
}

// agentSpec decodes a stored agent's spec once per reconcile; nil when it
// does not decode (such an agent cannot reference anything).
func (rc *reconcile) agentSpec(a *resource.Object) *resource.AgentSpec {
	k := a.Key()
	if s, ok := rc.specs[k]; ok {
		return s
	}
	var out *resource.AgentSpec
	if spec, err := resource.DecodeSpec[resource.AgentSpec](a); err == nil {
		out = &spec
	}
	if rc.specs == nil {
		rc.specs = map[resource.Key]*resource.AgentSpec{}
	}
	rc.specs[k] = out
	return out
}

// checkEnvironment reports a Deployment whose environment does not exist.
// Environments are the tenant's promotion stages: one in the Deployment's
// namespace wins, else the one in namespace "default", where Warden
// creates dev, staging and prod.
func (rc *reconcile) checkEnvironment(ctx context.Context, doc int, env string) error {
	ns := rc.applied[doc].Metadata.Namespace
	for _, ens := range []string{ns, resource.DefaultNamespace} {
		o, err := rc.res.get(ctx, resource.KindEnvironment, ens, env)
		if err != nil || o != nil {
			return err
		}
	}
	rc.diag(doc, "spec.environment", resource.ErrCodeNotFound,
		fmt.Sprintf("deployment %s targets environment %q, but no Environment %q exists", rc.applied[doc].Metadata.Name, env, env), "")
	return nil
}

// policyNamespaces returns the namespaces whose agents a Policy can bind:
// those its selector names, else every namespace ("").
func policyNamespaces(o *resource.Object) []string {
	ps, err := resource.DecodeSpec[resource.PolicySpec](o)
	if err != nil || ps.Selector == nil || len(ps.Selector.Namespaces) == 0 {
		return []string{""}
	}
	out := slices.Clone(ps.Selector.Namespaces)
	if !slices.Contains(out, o.Metadata.Namespace) {
		// Agents of the policy's own namespace may bind it explicitly.
		out = append(out, o.Metadata.Namespace)
	}
	slices.Sort(out)
	return out
}

// embedsWith reports whether o is a Model one of agent a's RAG indexes
// embeds with: the manifest names its route id.
func (rc *reconcile) embedsWith(ctx context.Context, a *resource.Object, spec *resource.AgentSpec, o *resource.Object) (bool, error) {
	if o.Kind != resource.KindModel || spec.Memory == nil || a.Metadata.Namespace != o.Metadata.Namespace {
		return false, nil
	}
	for _, name := range spec.Memory.Knowledge {
		ix, err := rc.res.get(ctx, resource.KindRAGIndex, a.Metadata.Namespace, name)
		if err != nil {
			return false, err
		}
		if ix == nil {
			continue
		}
		if e, _ := ix.Spec["embedding"].(map[string]any); e != nil && e["modelRef"] == o.Metadata.Name {
			return true, nil
		}
	}
	return false, nil
}

// references reports whether agent a depends on dependency o.
func references(a *resource.Object, spec *resource.AgentSpec, o *resource.Object) bool {
	name := o.Metadata.Name
	sameNS := a.Metadata.Namespace == o.Metadata.Namespace
	switch o.Kind {
	case resource.KindModel:
		return sameNS && (spec.ModelRoute.Primary == name || slices.Contains(spec.ModelRoute.Fallback, name))
	case resource.KindTool:
		return sameNS && slices.ContainsFunc(spec.Tools, func(t resource.AgentTool) bool { return t.Name == name })
	case resource.KindMCPServer:
		return sameNS && slices.ContainsFunc(spec.MCPServers, func(s resource.LocalRef) bool { return s.Name == name })
	case resource.KindMemory:
		return sameNS && spec.Memory != nil && spec.Memory.Working == name
	case resource.KindRAGIndex:
		return sameNS && spec.Memory != nil && slices.Contains(spec.Memory.Knowledge, name)
	case resource.KindPolicy:
		if sameNS && slices.Contains(spec.Policies, name) {
			return true
		}
		ps, err := resource.DecodeSpec[resource.PolicySpec](o)
		if err != nil {
			return false
		}
		sel := resource.PolicySelector{}
		if ps.Selector != nil {
			sel = *ps.Selector
		}
		return (len(sel.Namespaces) == 0 || slices.Contains(sel.Namespaces, a.Metadata.Namespace)) &&
			(len(sel.Agents) == 0 || slices.Contains(sel.Agents, a.Metadata.Name))
	}
	return false
}

// agent compiles one affected agent and runs its preflight.
func (rc *reconcile) agent(ctx context.Context, a affected) error {
	out, err := rc.c.compile(ctx, rc.res, rc.set, a.agent)
	if err != nil {
		return err
	}
	agentDoc, agentApplied := rc.index[a.agent.Key()]
	for _, p := range out.problems {
		switch {
		case agentApplied:
			rc.diag(agentDoc, p.Path, p.Code, p.Message, "")
		case p.cause != nil && rc.isApplied(p.cause):
			rc.diag(rc.index[p.cause.Key()], p.causePath, p.Code, p.Message, "")
		default:
			path := ""
			if rc.applied[a.trigger].Kind == resource.KindDeployment {
				path = "spec.agentRef.name"
			}
			rc.diag(a.trigger, path, p.Code, fmt.Sprintf("agent %s does not compile: %s: %s", a.agent.Metadata.Name, p.Path, p.Message), "")
		}
	}
	if out.manifest == nil {
		return nil
	}
	rc.manifests = append(rc.manifests, out.manifest)
	return rc.preflight(ctx, a, out)
}

func (rc *reconcile) isApplied(o *resource.Object) bool {
	_, ok := rc.index[o.Key()]
	return ok
}

// preflight evaluates the preflight hook for every environment the agent
// is deployed to and reports each deny.
func (rc *reconcile) preflight(ctx context.Context, a affected, out *result) error {
	ns, name := a.agent.Metadata.Namespace, a.agent.Metadata.Name
	deployments, err := rc.res.list(ctx, resource.KindDeployment, ns)
	if err != nil {
		return err
	}
	// Environment → the Deployment that targets it (an applied one first).
	targets := map[string]*resource.Object{}
	for _, d := range deployments {
		ds, err := resource.DecodeSpec[resource.DeploymentSpec](d)
		if err != nil || ds.AgentRef.Name != name || ds.Environment == "" {
			continue
		}
		if prev, ok := targets[ds.Environment]; !ok || (!rc.isApplied(prev) && rc.isApplied(d)) {
			targets[ds.Environment] = d
		}
	}
	envs := make([]string, 0, len(targets))
	for env, dep := range targets {
		if a.onlyDeployments && !rc.isApplied(dep) {
			continue
		}
		envs = append(envs, env)
	}
	slices.Sort(envs)

	models := append([]string{out.spec.ModelRoute.Primary}, out.spec.ModelRoute.Fallback...)
	tools := make([]policy.ToolRef, len(out.spec.Tools))
	for i, t := range out.spec.Tools {
		tools[i] = policy.ToolRef{Name: t.Name, SideEffect: t.SideEffect}
	}
	for _, env := range envs {
		dep := targets[env]
		doc := a.trigger
		if rc.isApplied(dep) {
			doc = rc.index[dep.Key()]
		}
		subject := rc.applied[doc]
		in := &policy.Input{
			Hook: resource.HookPreflight, Namespace: ns, Environment: env, Agent: name, Bound: out.agent.Policies,
			Kind: subject.Kind, Object: objectMap(subject), Models: models, Tools: tools,
		}
		for _, d := range rc.set.Evaluate(in) {
			if d.Denied() && !rc.broken[d.Namespace+"/"+d.Policy] {
				rc.denied(doc, a, in, d, out)
			}
		}
	}
	return nil
}

// denied turns a preflight deny into a diagnostic on the document that
// brought it about, pointing at the offending field where it can tell.
func (rc *reconcile) denied(doc int, a affected, in *policy.Input, d policy.Decision, out *result) {
	subject := rc.applied[doc]
	what, field := rc.offender(in, d)
	path := "spec"
	switch {
	case subject.Kind == resource.KindDeployment:
		path = "spec.environment"
	case subject.Kind == resource.KindAgent && field != "":
		path = field
	case subject.Kind == resource.KindPolicy && subject.Metadata.Name == d.Policy && subject.Metadata.Namespace == d.Namespace:
		path = fmt.Sprintf("spec.rules[%d].when", d.RuleIndex)
	}
	if what == "" {
		what = "agent " + a.agent.Metadata.Name
	}
	var msg string
	if d.Failed {
		msg = fmt.Sprintf("%s (agent %s, environment %s)", d.Message, a.agent.Metadata.Name, in.Environment)
	} else {
		msg = fmt.Sprintf("%s is denied in environment %s by policy %s (rule %s)", what, in.Environment, d.Ref(), d.Rule)
		if d.Message != "" {
			msg += ": " + d.Message
		}
	}
	rc.diag(doc, path, resource.ErrCodePolicyDenied, msg, d.Ref())
}

// offender finds which model or tool makes a rule deny, by evaluating the
// rule with the agent's route or tools narrowed to one entry at a time.
// It returns a description ("model openai:gpt-4o") and the agent's field,
// or "" when the rule does not single one out.
func (rc *reconcile) offender(in *policy.Input, d policy.Decision) (string, string) {
	fires := func(try *policy.Input) bool {
		for _, e := range rc.set.Evaluate(try) {
			if e.Policy == d.Policy && e.Namespace == d.Namespace && e.RuleIndex == d.RuleIndex && e.Denied() && !e.Failed {
				return true
			}
		}
		return false
	}
	if d.Failed {
		return "", ""
	}
	if rc.set.UsesVariable(d, policy.VarModels) {
		for i, m := range in.Models {
			try := *in
			try.Models = []string{m}
			if fires(&try) {
				if i == 0 {
					return "model " + m, "spec.modelRoute.primary"
				}
				return "model " + m, fmt.Sprintf("spec.modelRoute.fallback[%d]", i-1)
			}
		}
	}
	if rc.set.UsesVariable(d, policy.VarTools) {
		for i, t := range in.Tools {
			try := *in
			try.Tools = []policy.ToolRef{t}
			if fires(&try) {
				return "tool " + t.Name, fmt.Sprintf("spec.tools[%d].name", i)
			}
		}
	}
	return "", ""
}

// objectMap renders a resource as the generic map preflight rules see as
// `object`.
func objectMap(o *resource.Object) map[string]any {
	m, err := resource.ToMap(o)
	if err != nil {
		return map[string]any{}
	}
	return m
}
