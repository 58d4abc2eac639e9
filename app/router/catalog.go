package router

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/upstream"
)

type nsName struct{ ns, name string }

// snapshot is one tenant's configuration as the router reads it: Models
// with their providers, agents' routes and the policy set. It is immutable
// once built, except for the API keys it resolves on first use.
type snapshot struct {
	tenant   string
	models   map[nsName]*modelEntry
	byRoute  map[nsName]*modelEntry // (namespace, "<provider>:<model>")
	agents   map[nsName]*agentRoute
	policies *policy.Set
}

// modelEntry is a Model and its provider.
type modelEntry struct {
	ns, name string
	spec     resource.ModelSpec
	routeID  string
	prov     provider
	// broken says why the Model cannot be called (a provider without an
	// endpoint); the router skips it.
	broken string

	// keyMu guards key, resolved once and kept for the snapshot's life;
	// a failed resolution is retried by the next call.
	keyMu sync.Mutex
	key   *string
}

// agentRoute is an agent's compiled route.
type agentRoute struct {
	name     string
	manifest string
	// models are the route's Models, primary first; a route id that names
	// no Model of the namespace is kept as a nil entry with its id.
	models   []*modelEntry
	routeIDs []string
	bound    []string
}

// catalog caches one snapshot per tenant; a configuration commit
// (Store.ListenConfig) drops the tenant's snapshot, and a snapshot older
// than the tenant's Store.ConfigGeneration is reloaded by the next call.
type catalog struct {
	st      store.Store
	engine  *policy.Engine
	secrets *secret.Broker
	hc      *http.Client
	ups     *upstream.Pools
	log     *slog.Logger

	mu      sync.Mutex
	entries map[string]*catalogEntry
}

type catalogEntry struct {
	// gen is the store's configuration generation of the tenant read
	// before the snapshot was loaded: a later commit makes it stale.
	gen   uint64
	ready chan struct{}
	snap  *snapshot
	err   error
}

func (c *catalog) invalidate(tenant string) {
	c.mu.Lock()
	delete(c.entries, tenant)
	c.mu.Unlock()
}

func (c *catalog) get(ctx context.Context, tenant string) (*snapshot, error) {
	// The generation moves as a configuration commit returns, before its
	// signal reaches invalidate: a call made after an apply answered never
	// sees the configuration from before it.
	gen := c.st.ConfigGeneration(tenant)
	c.mu.Lock()
	e, ok := c.entries[tenant]
	if !ok || e.gen < gen {
		e = &catalogEntry{ready: make(chan struct{}), gen: gen}
		c.entries[tenant] = e
		c.mu.Unlock()
		e.snap, e.err = c.load(context.WithoutCancel(ctx), tenant)
		close(e.ready)
		if e.err != nil {
			c.mu.Lock()
			if c.entries[tenant] == e {
				delete(c.entries, tenant)
			}
			c.mu.Unlock()
		}
		return e.snap, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.snap, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *catalog) load(ctx context.Context, tenant string) (*snapshot, error) {
	var models, agents, manifests, policies []*resource.Object
	err := c.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		if models, err = store.ListAll(ctx, r, resource.KindModel, nil); err != nil {
			return err
		}
		if agents, err = store.ListAll(ctx, r, resource.KindAgent, nil); err != nil {
			return err
		}
		if manifests, err = store.ListAll(ctx, r, resource.KindCompiledAgentManifest, nil); err != nil {
			return err
		}
		policies, err = store.ListAll(ctx, r, resource.KindPolicy, nil)
		return err
	})
	if err != nil {
		return nil, errorf("load configuration of tenant %s: %w", tenant, err)
	}
	s := &snapshot{tenant: tenant, models: map[nsName]*modelEntry{}, byRoute: map[nsName]*modelEntry{}, agents: map[nsName]*agentRoute{}}
	slices.SortFunc(models, func(a, b *resource.Object) int { return cmpKey(a, b) })
	for _, o := range models {
		spec, err := resource.DecodeSpec[resource.ModelSpec](o)
		if err != nil {
			c.log.Warn("skip undecodable model", "tenant", tenant, "model", o.Key().String(), "err", err)
			continue
		}
		me := &modelEntry{ns: o.Metadata.Namespace, name: o.Metadata.Name, spec: spec, routeID: resource.ModelRouteID(spec.Provider, spec.Model)}
		if me.prov, err = newProvider(c.hc, c.ups, spec); err != nil {
			me.broken = err.Error()
		}
		s.models[nsName{me.ns, me.name}] = me
		if _, ok := s.byRoute[nsName{me.ns, me.routeID}]; !ok {
			s.byRoute[nsName{me.ns, me.routeID}] = me
		}
	}
	byName := make(map[nsName]*resource.Object, len(manifests))
	for _, m := range manifests {
		byName[nsName{m.Metadata.Namespace, m.Metadata.Name}] = m
	}
	for _, o := range agents {
		spec, err := resource.DecodeSpec[resource.AgentSpec](o)
		if err != nil {
			continue
		}
		ns := o.Metadata.Namespace
		ar := &agentRoute{name: o.Metadata.Name, bound: spec.Policies}
		mname, _ := o.Status["compiledManifest"].(string)
		if mname == "" {
			mname = compile.ManifestName(o.Metadata.Name, o.Metadata.Generation)
		}
		if m, ok := byName[nsName{ns, mname}]; ok {
			if ms, err := resource.DecodeSpec[resource.CompiledAgentManifestSpec](m); err == nil {
				ar.manifest = mname
				ids := append([]string{ms.ModelRoute.Primary}, ms.ModelRoute.Fallback...)
				names := append([]string{spec.ModelRoute.Primary}, spec.ModelRoute.Fallback...)
				for i, id := range ids {
					if id == "" {
						continue
					}
					// The Model the agent names, when it still has the
					// compiled route id; else the namespace's Model of
					// that id.
					var me *modelEntry
					if i < len(names) {
						if m := s.models[nsName{ns, names[i]}]; m != nil && m.routeID == id {
							me = m
						}
					}
					if me == nil {
						me = s.byRoute[nsName{ns, id}]
					}
					ar.models = append(ar.models, me)
					ar.routeIDs = append(ar.routeIDs, id)
				}
			}
		}
		s.agents[nsName{ns, ar.name}] = ar
	}
	set, errs := c.engine.Build(policies)
	for _, e := range errs {
		c.log.Warn("policy does not compile; its broken rules deny", "tenant", tenant, "policy", e.Namespace+"/"+e.Name)
	}
	s.policies = set
	return s, nil
}

func cmpKey(a, b *resource.Object) int {
	if a.Metadata.Namespace != b.Metadata.Namespace {
		if a.Metadata.Namespace < b.Metadata.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Metadata.Name < b.Metadata.Name:
		return -1
	case a.Metadata.Name > b.Metadata.Name:
		return 1
	}
	return 0
}

// apiKey resolves the Model's API key through the secret broker, once per
// snapshot (a Secret's change drops the snapshot); "" when it has none.
func (c *catalog) apiKey(ctx context.Context, tenant string, me *modelEntry) (string, error) {
	ref := me.spec.APIKeySecretRef
	if ref == nil {
		return "", nil
	}
	me.keyMu.Lock()
	defer me.keyMu.Unlock()
	if me.key != nil {
		return *me.key, nil
	}
	var key string
	err := c.st.View(context.WithoutCancel(ctx), tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		key, err = c.secrets.Resolve(ctx, r, tenant, me.ns, ref.Name, ref.Key)
		return err
	})
	if err != nil {
		return "", err
	}
	me.key = &key
	return key, nil
}
