package apply_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

func openStore(tb testing.TB, kind string) store.Store {
	tb.Helper()
	url := "sqlite://" + filepath.Join(tb.TempDir(), "w.db")
	if kind == "postgres" {
		url = pgtest.NewDatabase(tb)
	}
	st, err := backend.Open(context.Background(), url, backend.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	_, _, err = server.Bootstrap(context.Background(), st, nil)
	require.NoError(tb, err)
	return st
}

func newPipeline(st store.Store) *apply.Pipeline {
	return apply.New(apply.Deps{Store: st, Compiler: compile.New(compile.Options{}.WithDefaults(), policy.NewEngine())})
}

// body builds one apply body of n documents: tools, models and agents that
// use them, so the benchmark includes reconcile and compile.
func body(n, round int) string {
	var sb strings.Builder
	agents := n / 10
	tools := n - agents - 2
	fmt.Fprintf(&sb, "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata:\n  name: primary\nspec:\n  provider: openai\n  model: gpt-4o\n  capabilities:\n    toolUse: true\n---\n")
	fmt.Fprintf(&sb, "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata:\n  name: fallback\nspec:\n  provider: anthropic\n  model: claude-sonnet\n  capabilities:\n    toolUse: true\n---\n")
	for i := range tools {
		fmt.Fprintf(&sb, "apiVersion: warden.dev/v1alpha1\nkind: Tool\nmetadata:\n  name: sys%d.action%d\nspec:\n  description: round %d\n  source: function\n  sideEffect: read_only\n  inputSchema:\n    type: object\n    properties:\n      q: {type: string}\n---\n", i, i, round)
	}
	for a := range agents {
		fmt.Fprintf(&sb, "apiVersion: warden.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: agent-%d\nspec:\n  description: round %d\n  framework:\n    adapter: langgraph\n  modelRoute:\n    primary: primary\n    fallback: [fallback]\n  tools:\n", a, round)
		for k := range 5 {
			fmt.Fprintf(&sb, "  - name: sys%d.action%d\n", (a*5+k)%tools, (a*5+k)%tools)
		}
		sb.WriteString("---\n")
	}
	return sb.String()
}

// BenchmarkApply1000 applies one body of 1,000 documents (898 tools, 2
// models, 100 agents of 5 tools each, so 100 manifests are compiled), each
// iteration changing every document. The timed part is what the API does
// with a body: decode, admit, write, reconcile, compile and commit.
func BenchmarkApply1000(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			st := openStore(b, kind)
			p := newPipeline(st)
			pr := auth.SystemPrincipal(server.LocalTenant)
			ctx := context.Background()
			round := 0
			for b.Loop() {
				b.StopTimer()
				raw := []byte(body(1000, round))
				round++
				b.StartTimer()
				// Timed like the API: decode the body, then apply it.
				docs, err := resource.DecodeDocuments(raw)
				require.NoError(b, err)
				require.Len(b, docs, 1000)
				res, err := p.Apply(ctx, pr, docs)
				require.NoError(b, err)
				require.Len(b, res.Manifests, 100)
			}
		})
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := openStore(t, kind)
			p := newPipeline(st)
			pr := auth.SystemPrincipal(server.LocalTenant)
			ctx := context.Background()
			good := body(100, 0)
			// The last agent references a tool that does not exist.
			bad := good + "apiVersion: warden.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: dangling\nspec:\n  framework:\n    adapter: langgraph\n  modelRoute:\n    primary: primary\n  tools:\n  - name: missing.tool\n"
			docs, err := resource.DecodeDocuments([]byte(bad))
			require.NoError(t, err)
			_, err = p.Apply(ctx, pr, docs)
			require.Error(t, err)
			require.NoError(t, st.View(ctx, server.LocalTenant, func(ctx context.Context, r store.Reader) error {
				for _, kind := range []string{resource.KindTool, resource.KindAgent, resource.KindModel, resource.KindCompiledAgentManifest} {
					res, err := r.ResourceList(ctx, store.ListParams{Kind: kind, Namespace: "default"})
					require.NoError(t, err)
					require.Empty(t, res.Items, "%s written by a rejected apply", kind)
				}
				evs, err := r.EventList(ctx, 0, 1000)
				require.NoError(t, err)
				for _, ev := range evs {
					require.NotEqual(t, "AgentCompiled", ev.Type)
				}
				return nil
			}))
			docs, err = resource.DecodeDocuments([]byte(good))
			require.NoError(t, err)
			res, err := p.Apply(ctx, pr, docs)
			require.NoError(t, err)
			require.Len(t, res.Manifests, 10)
		})
	}
}
