package agbom_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/agbom"
	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/jobs"
)

// wait bounds every condition a test waits on.
const wait = 20 * time.Second

const tenant = "acme"

func backends() map[string]func(t testing.TB) string {
	return map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "warden.db") },
		"postgres": func(t testing.TB) string { return pgtest.NewDatabase(t) },
	}
}

// env is a store with the apply pipeline, the AgBOM service and, when
// started with River, the AgBOM job queue, all on one event bus.
type env struct {
	st       store.Store
	bus      *events.Bus
	pipeline *apply.Pipeline
	svc      *agbom.Service
	updates  chan events.Event
}

func newEnv(t testing.TB, storeURL string, withRiver bool) *env {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	bus := events.NewBus()
	engine := policy.NewEngine()
	e := &env{st: st, bus: bus, updates: make(chan events.Event, 64)}
	e.pipeline = apply.New(apply.Deps{Store: st, Compiler: compile.New(compile.Options{}.WithDefaults(), engine), Bus: bus, Policies: engine})
	e.svc, err = agbom.New(agbom.Config{Store: st, Bus: bus, WardenVersion: "1.0.0-test"})
	require.NoError(t, err)
	bus.Subscribe(func(ev events.Event) {
		if ev.Type == events.AgBOMUpdated {
			e.updates <- ev
		}
	})
	var q agbom.Queue
	if withRiver {
		workers := river.NewWorkers()
		agboms := jobs.NewAgBOMs(workers)
		cfg := jobs.Config{Workers: workers, TestOnly: true, FetchPollInterval: 50 * time.Millisecond}
		var queue *jobs.Queue
		if pg, ok := st.(*postgres.Store); ok {
			queue, err = jobs.OpenPostgres(ctx, storeURL, pg.Pool(), cfg)
		} else {
			queue, err = jobs.OpenSQLite(ctx, strings.TrimPrefix(storeURL, "sqlite://"), cfg)
		}
		require.NoError(t, err)
		agboms.SetQueue(queue)
		agboms.Bind(e.svc)
		require.NoError(t, queue.Start(ctx))
		t.Cleanup(func() { require.NoError(t, queue.Stop(context.Background())) })
		q = agboms
	}
	stop := e.svc.Watch(bus, q)
	t.Cleanup(stop)
	require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
		for _, ns := range []string{"support", "platform"} {
			if _, err := tx.ResourceCreate(ctx, &resource.Object{APIVersion: resource.GroupVersion, Kind: resource.KindNamespace,
				Metadata: resource.ObjectMeta{Name: ns}, Spec: map[string]any{}}); err != nil {
				return err
			}
		}
		return nil
	}))
	return e
}

func (e *env) apply(t testing.TB, body []byte) {
	t.Helper()
	docs, err := resource.DecodeDocuments(body)
	require.NoError(t, err)
	_, err = e.pipeline.Apply(context.Background(), auth.SystemPrincipal(tenant), docs)
	require.NoError(t, err)
}

// next waits for the next AgBOMUpdated.
func (e *env) next(t testing.TB) events.Event {
	t.Helper()
	select {
	case ev := <-e.updates:
		return ev
	case <-time.After(wait):
		t.Fatalf("no AgBOMUpdated within %s", wait)
		return events.Event{}
	}
}

func fixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/fleet.yaml")
	require.NoError(t, err)
	return b
}

// secondGeneration adds a tool to the agent, moves the primary model's
// version and bumps the bound policy's version, in one apply.
const secondGeneration = `
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: github.create_issue, namespace: support}
spec: {source: function, sideEffect: external_write}
---
apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: gpt-4o, namespace: support}
spec:
  provider: openai
  model: gpt-4o
  version: "2024-11-20"
  capabilities: {toolUse: true, streaming: true, contextWindow: 128000}
---
apiVersion: warden.dev/v1alpha1
kind: Policy
metadata: {name: refund-limits, namespace: support}
spec:
  version: "3"
  description: Human approval above 100 USD.
  rules:
    - name: approve-above-100
      hooks: [toolCallRequest]
      when: 'tool.name == "stripe.refund" && has(input.amount) && input.amount > 100'
      action: require_approval
---
apiVersion: warden.dev/v1alpha1
kind: Agent
metadata: {name: support-bot, namespace: support}
spec:
  description: First-line customer support.
  framework: {adapter: openai-agents, version: 0.4.2}
  modelRoute: {primary: gpt-4o, fallback: [claude-sonnet]}
  tools:
    - name: zendesk.search_tickets
    - name: stripe.refund
    - name: files.read
    - name: slack.notify
    - name: github.create_issue
  mcpServers: [{name: github}]
  memory: {working: support-bot-working}
  policies: [refund-limits]
`

// TestJobEmitsAgBOMUpdatedAfterApply: an apply compiles the agent, the
// River job on AgentCompiled stores the BOM in the manifest's status and
// emits AgBOMUpdated (on the bus and in the persisted event log); a second
// generation gets its own BOM, the first keeps its own, and the diff shows
// the added tool, the changed model, the bumped policy and the RAG index
// the agent no longer binds.
func TestJobEmitsAgBOMUpdatedAfterApply(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t), true)
			ctx := context.Background()
			e.apply(t, fixture(t))
			ev := e.next(t)
			require.Equal(t, tenant, ev.Tenant)
			require.Equal(t, "support", ev.Namespace)
			require.Equal(t, "Agent/support-bot", ev.Subject)
			require.Equal(t, "support-bot-g1", ev.Data["manifest"])

			// Stored in the manifest's status and in the event log.
			var stored map[string]any
			var logged []events.Event
			require.NoError(t, e.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
				m, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindCompiledAgentManifest, Namespace: "support", Name: "support-bot-g1"})
				if err != nil {
					return err
				}
				stored, _ = m.Status[agbom.StatusField].(map[string]any)
				logged, err = r.EventList(ctx, 0, 1000)
				return err
			}))
			require.NotNil(t, stored)
			require.Equal(t, "1.0.0-test", stored["wardenVersion"])
			require.Contains(t, types(logged), events.AgBOMUpdated)

			b1, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
			require.NoError(t, err)
			require.Equal(t, int64(1), b1.Generation)
			require.Equal(t, int64(1), b1.Revision)
			require.NotNil(t, b1.Component("mcp-server:filesystem"))

			e.apply(t, []byte(secondGeneration))
			ev = e.next(t)
			require.Equal(t, "support-bot-g2", ev.Data["manifest"])

			d, err := e.svc.Diff(ctx, tenant, "support", "support-bot", 1, 2)
			require.NoError(t, err)
			require.Len(t, d.Added, 1)
			require.Equal(t, "tool:github.create_issue", d.Added[0].Ref)
			changed := map[string][]agbom.FieldChange{}
			for _, c := range d.Changed {
				changed[c.Ref] = c.Fields
			}
			require.Contains(t, changed["model:gpt-4o"], agbom.FieldChange{Field: "version", From: "2024-08-06", To: "2024-11-20"})
			require.Contains(t, changed["policy:support/refund-limits"], agbom.FieldChange{Field: "version", From: "2", To: "3"})
			// Generation 2 binds no RAG index: the index goes, with the
			// sources and the embedding model only it used.
			var removed []string
			for _, c := range d.Removed {
				removed = append(removed, c.Ref)
			}
			require.Equal(t, []string{"knowledge-source:faq", "knowledge-source:handbook", "knowledge-source:help-center",
				"model:embedder", "rag-index:support-kb"}, removed)

			// Generation 1's BOM kept the versions it was compiled with.
			old, err := e.svc.Get(ctx, tenant, "support", "support-bot", 1)
			require.NoError(t, err)
			require.Equal(t, "2024-08-06", old.Component("model:gpt-4o").Version)

			// Default diff: the newest generation against the one before.
			d2, err := e.svc.Diff(ctx, tenant, "support", "support-bot", 0, 0)
			require.NoError(t, err)
			require.Equal(t, d, d2)
		})
	}
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestRewriteMovesRevision: a dependency change rewrites the current
// generation's manifest in place; its BOM gets a new revision, and a
// refresh of an unchanged BOM changes nothing and emits nothing.
func TestRewriteMovesRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), false)
	ctx := context.Background()
	e.apply(t, fixture(t))
	e.next(t)
	first, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
	require.NoError(t, err)

	e.apply(t, []byte(`
apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: github, namespace: support}
spec:
  transport: stdio
  command: [github-mcp-server, stdio]
  pinnedVersion: 0.9.1
`))
	ev := e.next(t)
	require.Equal(t, "support-bot-g1", ev.Data["manifest"])
	require.EqualValues(t, 2, ev.Data["revision"])
	second, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), second.Generation)
	require.Equal(t, int64(2), second.Revision)
	require.Equal(t, "0.9.1", second.Component("mcp-server:github").Version)
	require.NotEqual(t, first.ManifestSha, second.ManifestSha)

	again, changed, err := e.svc.Refresh(ctx, tenant, "support", "support-bot", 0, "")
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, second, again)
	select {
	case ev := <-e.updates:
		t.Fatalf("an unchanged refresh emitted %+v", ev)
	default:
	}
}

// TestConcurrentRefreshes: many refreshes of one manifest at once leave one
// consistent BOM (the status write's precondition turns races into retries).
func TestConcurrentRefreshes(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t), false)
			e.apply(t, fixture(t))
			e.next(t)
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, errs[i] = e.svc.Refresh(context.Background(), tenant, "support", "support-bot", 1, "")
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			b, err := e.svc.Get(context.Background(), tenant, "support", "support-bot", 1)
			require.NoError(t, err)
			require.Equal(t, int64(1), b.Revision)
		})
	}
}

// TestOtherTenantSeesNothing: the BOMs of one tenant are invisible to
// another, in the store as through the service.
func TestOtherTenantSeesNothing(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t), false)
			e.apply(t, fixture(t))
			e.next(t)
			ctx := context.Background()
			_, err := e.svc.Get(ctx, "intruder", "support", "support-bot", 0)
			require.ErrorIs(t, err, agbom.ErrNotFound)
			_, err = e.svc.Get(ctx, "intruder", "support", "support-bot", 1)
			require.ErrorIs(t, err, agbom.ErrNotFound)
			_, _, err = e.svc.Refresh(ctx, "intruder", "support", "support-bot", 1, "")
			require.ErrorIs(t, err, agbom.ErrNotFound)
			_, err = e.svc.Diff(ctx, "intruder", "support", "support-bot", 1, 1)
			require.ErrorIs(t, err, agbom.ErrNotFound)
		})
	}
}

func TestGetErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), false)
	e.apply(t, fixture(t))
	e.next(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		agent string
		gen   int64
		want  error
	}{
		{"unknown agent", "nobody", 0, agbom.ErrNotFound},
		{"unknown generation", "support-bot", 7, agbom.ErrNotFound},
		{"negative generation", "support-bot", -1, agbom.ErrInvalid},
	} {
		_, err := e.svc.Get(ctx, tenant, "support", tc.agent, tc.gen)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	_, err := e.svc.Diff(ctx, tenant, "support", "support-bot", 0, 1)
	require.ErrorIs(t, err, agbom.ErrInvalid, "generation 1 has none before it")
}

// TestDependencyChangeRefreshes: a Model's version and an MCP server's URL
// are not in the manifest, so changing them compiles nothing; the BOM of
// the agents using them is refreshed all the same (a new revision of the
// same generation, the compile time kept), by the River job and in-process.
func TestDependencyChangeRefreshes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		url   func(t testing.TB) string
		river bool
	}{
		{"sqlite river", backends()["sqlite"], true},
		{"postgres river", backends()["postgres"], true},
		{"sqlite in-process", backends()["sqlite"], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.url(t), tc.river)
			ctx := context.Background()
			e.apply(t, fixture(t))
			e.next(t)
			before, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
			require.NoError(t, err)

			e.apply(t, []byte(`apiVersion: warden.dev/v1alpha1
kind: Model
metadata: {name: gpt-4o, namespace: support}
spec:
  provider: openai
  model: gpt-4o
  version: "2024-11-20"
  capabilities: {toolUse: true, streaming: true, contextWindow: 128000}
`))
			ev := e.next(t)
			require.Equal(t, "support-bot-g1", ev.Data["manifest"])
			after, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
			require.NoError(t, err)
			require.Equal(t, int64(1), after.Generation)
			require.Equal(t, before.Revision+1, after.Revision)
			require.Equal(t, before.ManifestSha, after.ManifestSha, "the manifest did not change")
			require.Equal(t, before.CompiledAt, after.CompiledAt)
			require.Equal(t, "2024-11-20", after.Component("model:gpt-4o").Version)

			e.apply(t, []byte(`apiVersion: warden.dev/v1alpha1
kind: MCPServer
metadata: {name: filesystem, namespace: support}
spec:
  url: http://files.internal:9001/mcp
  pinnedVersion: 1.4.2
  trustScore: 0.8
`))
			e.next(t)
			third, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
			require.NoError(t, err)
			require.Equal(t, after.Revision+1, third.Revision)
			require.NotEqual(t, after.Component("mcp-server:filesystem").Hash, third.Component("mcp-server:filesystem").Hash)

			// A knowledge source's new content changes no manifest, but
			// the BOM of every agent whose index reads it.
			e.apply(t, []byte(`apiVersion: warden.dev/v1alpha1
kind: KnowledgeSource
metadata: {name: faq, namespace: support}
spec:
  type: inline
  documents:
    - {id: refunds, title: Refunds, content: Refunds take up to 10 days.}
    - {id: returns, title: Returns, content: Returns are free.}
`))
			e.next(t)
			fourth, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
			require.NoError(t, err)
			require.Equal(t, third.Revision+1, fourth.Revision)
			require.Equal(t, before.ManifestSha, fourth.ManifestSha, "the manifest did not change")
			require.NotEqual(t, third.Component("knowledge-source:faq").Hash, fourth.Component("knowledge-source:faq").Hash)
			docs, _ := fourth.Component("knowledge-source:faq").Property("documents")
			require.Equal(t, "2", docs)
		})
	}
}
