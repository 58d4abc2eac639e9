package agbom

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// Queue schedules the regeneration of a manifest's BOM as a durable job
// (jobs.AgBOMs, a River job on the store's database).
type Queue interface {
	// EnqueueAgBOM schedules the refresh of a manifest's BOM. cause names
	// what asked for it, so that two causes are two jobs: the manifest's
	// resourceVersion after a compile (compiledAt is then its time), or
	// "<Kind>/<name>@<resourceVersion>" of a changed dependency.
	EnqueueAgBOM(ctx context.Context, tenant, namespace, manifest, cause, compiledAt string) error
}

// enqueueTimeout bounds the insert of one job (or one in-process
// refresh): a stuck database must not pile up goroutines.
const enqueueTimeout = 30 * time.Second

// Watch subscribes to bus and, for every AgentCompiled, schedules the
// regeneration of that manifest's BOM: as a job on q, or, with a nil q,
// in a goroutine of this process. A changed Model, Tool, MCPServer,
// Memory, RAGIndex, KnowledgeSource or Policy whose manifest fields stayed
// the same (a model's
// version, an MCP server's URL, a tool's description) compiles nothing,
// yet changes the BOMs of the agents using it: for every such
// ResourceApplied the current manifests of the agents that may use it are
// refreshed likewise (a refresh that finds nothing changed writes
// nothing). The bus handler itself never blocks the
// apply that published the event. The returned function unsubscribes and
// waits for the work already started.
//
// A job lost between commit and insert (the process died) leaves the
// manifest without a current stored BOM; Get then answers a BOM built on
// the fly and the next refresh stores one.
func (s *Service) Watch(bus *events.Bus, q Queue) (stop func()) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		closed bool
	)
	base, cancel := context.WithCancel(context.Background())
	// schedule refreshes one manifest: a job on q, else in-process.
	schedule := func(ctx context.Context, tenant, ns, manifest, cause, compiledAt string) {
		var err error
		if q != nil {
			err = q.EnqueueAgBOM(ctx, tenant, ns, manifest, cause, compiledAt)
		} else {
			err = s.RefreshManifest(ctx, tenant, ns, manifest, compiledAt)
		}
		if err != nil {
			s.cfg.Logger.Error("schedule AgBOM refresh", "tenant", tenant, "namespace", ns, "manifest", manifest, "err", err)
		}
	}
	// spawn runs fn in a goroutine Watch's stop waits for.
	spawn := func(fn func(ctx context.Context)) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, done := context.WithTimeout(base, enqueueTimeout)
			defer done()
			fn(ctx)
		}()
	}
	unsubscribe := bus.Subscribe(func(ev events.Event) {
		rv, _ := ev.Data["resourceVersion"].(string)
		switch ev.Type {
		case events.AgentCompiled:
			manifest, _ := ev.Data["manifest"].(string)
			if manifest == "" {
				return
			}
			compiledAt := ev.Time.UTC().Format(time.RFC3339)
			spawn(func(ctx context.Context) { schedule(ctx, ev.Tenant, ev.Namespace, manifest, rv, compiledAt) })
		case events.ResourceApplied:
			kind, name, _ := strings.Cut(ev.Subject, "/")
			// A created dependency is used by no manifest compiled before
			// it (a reference to it could not compile); the apply's own
			// compiles are the AgentCompiled jobs'.
			if action, _ := ev.Data["action"].(string); !dependencyKind(kind) || action == "created" {
				return
			}
			spawn(func(ctx context.Context) {
				ms, err := s.dependents(ctx, ev.Tenant, ev.Namespace, kind, name)
				if err != nil {
					s.cfg.Logger.Error("find the agents of a changed dependency", "tenant", ev.Tenant, "subject", ev.Subject, "err", err)
					return
				}
				for _, m := range ms {
					schedule(ctx, ev.Tenant, m.namespace, m.name, kind+"/"+name+"@"+rv, "")
				}
			})
		}
	})
	return func() {
		unsubscribe()
		mu.Lock()
		closed = true
		mu.Unlock()
		wg.Wait()
		cancel()
	}
}

// dependencyKind reports whether kind is a resource a manifest resolves.
func dependencyKind(kind string) bool {
	switch kind {
	case resource.KindModel, resource.KindTool, resource.KindMCPServer, resource.KindMemory, resource.KindRAGIndex,
		resource.KindKnowledgeSource, resource.KindPolicy:
		return true
	}
	return false
}

type manifestRef struct{ namespace, name string }

// dependents returns the current manifests of the agents that may use the
// resource kind/name of namespace ns: those naming it, for models, tools
// memories and RAG indexes; every agent of the namespace for MCP servers
// (a tool may reach one the agent does not name), and, for knowledge
// sources and models, every agent of the namespace that binds a RAG index
// (an index reads the source or embeds with the model); every agent of the
// tenant for policies (a selector may bind one across namespaces).
func (s *Service) dependents(ctx context.Context, tenant, ns, kind, name string) ([]manifestRef, error) {
	listNS := ns
	if kind == resource.KindPolicy {
		listNS = ""
	}
	var out []manifestRef
	err := s.cfg.Store.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		p := store.ListParams{Kind: resource.KindAgent, Namespace: listNS, Limit: store.MaxPageSize}
		for {
			page, err := r.ResourceList(ctx, p)
			if err != nil {
				return fmt.Errorf("agbom: list agents: %w", err)
			}
			for _, a := range page.Items {
				m, _ := a.Status["compiledManifest"].(string)
				if m != "" && mayUse(a, kind, name) {
					out = append(out, manifestRef{namespace: a.Metadata.Namespace, name: m})
				}
			}
			if page.Continue == "" {
				return nil
			}
			p.Continue = page.Continue
		}
	})
	return out, err
}

// mayUse reports whether agent a may use the resource kind/name of its
// namespace, judged from its spec's names alone.
func mayUse(a *resource.Object, kind, name string) bool {
	named := func(v any) bool { s, _ := v.(string); return s == name }
	mem, _ := a.Spec["memory"].(map[string]any)
	knowledge, _ := mem["knowledge"].([]any)
	switch kind {
	case resource.KindModel:
		route, _ := a.Spec["modelRoute"].(map[string]any)
		fallback, _ := route["fallback"].([]any)
		return named(route["primary"]) || slices.ContainsFunc(fallback, named) || len(knowledge) > 0
	case resource.KindRAGIndex:
		return slices.ContainsFunc(knowledge, named)
	case resource.KindKnowledgeSource:
		return len(knowledge) > 0
	case resource.KindTool:
		tools, _ := a.Spec["tools"].([]any)
		return slices.ContainsFunc(tools, func(t any) bool { m, _ := t.(map[string]any); return named(m["name"]) })
	case resource.KindMemory:
		return named(mem["working"])
	}
	return true
}
