package rag_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/rag"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/workload"
	"github.com/warden-dev/warden/jobs"
)

// syncQueue runs a refresh at once, as the River worker would.
type syncQueue struct {
	svc  *rag.Service
	runs int
}

func (q *syncQueue) EnqueueRAGRefresh(ctx context.Context, tenant, ns, index string) (jobs.RAGJob, error) {
	q.runs++
	return jobs.RAGJob{ID: int64(q.runs), State: "completed"}, q.svc.RefreshJob(ctx, tenant, ns, index)
}

// bundle is what a test needs.
type bundle struct {
	t      *testing.T
	st     store.Store
	svc    *rag.Service
	app    *fiber.App
	issuer *workload.Issuer
	bus    *events.Bus
	queue  *syncQueue
	keys   map[string]string // "tenant/role@ns" -> secret
	root   string
}

const tenantA, tenantB = "acme", "globex"

func openStore(t *testing.T, url string) store.Store {
	t.Helper()
	if url == "" {
		url = "sqlite://" + t.TempDir() + "/warden.db"
	}
	st, err := backend.Open(context.Background(), url, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// setup builds a service on a fresh store (SQLite when url is empty) with
// API keys of every role in tenants A and B.
func setup(t *testing.T, url string, mutate ...func(*rag.Config)) *bundle {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, url)
	mk := make([]byte, 32)
	_, _ = rand.Read(mk)
	kr, err := secret.NewKeyring(mk)
	require.NoError(t, err)
	issuer, err := workload.NewIssuer(ctx, st, kr, time.Now, workload.Options{Issuer: "http://warden.test"})
	require.NoError(t, err)
	b := &bundle{t: t, st: st, issuer: issuer, bus: events.NewBus(), queue: &syncQueue{}, keys: map[string]string{}, root: t.TempDir()}
	cfg := rag.Config{
		Store: st,
		Authn: auth.NewAuthenticator(st, time.Now, workload.NewVerifier(issuer, workload.AudienceRAG, time.Now)),
		Authz: authz.New(st, time.Now), Queue: b.queue, Bus: b.bus,
		Fetcher: rag.Fetcher{FileRoot: b.root},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	b.svc, err = rag.New(cfg)
	require.NoError(t, err)
	b.queue.svc = b.svc
	b.app, err = b.svc.App()
	require.NoError(t, err)
	for _, tenant := range []string{tenantA, tenantB} {
		for _, k := range []struct{ role, ns string }{
			{auth.RoleViewer, "default"}, {auth.RoleEditor, "default"}, {auth.RoleAdmin, "default"}, {auth.RoleEditor, "other"},
		} {
			sec, hash, err := auth.NewAPIKeySecret()
			require.NoError(t, err)
			name := tenant + "/" + k.role + "@" + k.ns
			require.NoError(t, st.Update(ctx, tenant, func(ctx context.Context, tx store.Tx) error {
				return tx.APIKeyInsert(ctx, store.APIKey{ID: strings.NewReplacer("/", "-", "@", "-").Replace(name), Name: k.role + "-" + k.ns,
					SecretHash: hash, Namespace: k.ns, Role: k.role, CreatedAt: time.Now()})
			}))
			b.keys[name] = sec
		}
	}
	return b
}

// token mints a workload token of agent for audience.
func (b *bundle) token(tenant, ns, agent, audience string) string {
	b.t.Helper()
	tok, _, err := b.issuer.Issue(context.Background(), workload.IssueParams{
		Tenant: tenant, Namespace: ns, Agent: agent, Environment: "dev", Audience: audience,
	})
	require.NoError(b.t, err)
	return tok
}

// apply creates or replaces resources in tenant.
func (b *bundle) apply(tenant string, objs ...*resource.Object) {
	b.t.Helper()
	require.NoError(b.t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		for _, o := range objs {
			cur, err := tx.ResourceGet(ctx, o.Key())
			if err == nil {
				o.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
				if _, err := tx.ResourceUpdate(ctx, o); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.ResourceCreate(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}))
}

func obj(kind, name string, spec map[string]any) *resource.Object {
	return &resource.Object{APIVersion: resource.GroupVersion, Kind: kind,
		Metadata: resource.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}
}

func index(name string, sources ...string) *resource.Object {
	s := make([]any, len(sources))
	for i, v := range sources {
		s[i] = v
	}
	return obj(resource.KindRAGIndex, name, map[string]any{"sources": s, "chunking": map[string]any{"size": 200, "overlap": 20}})
}

func inline(name string, docs ...map[string]any) *resource.Object {
	d := make([]any, len(docs))
	for i, v := range docs {
		d[i] = v
	}
	return obj(resource.KindKnowledgeSource, name, map[string]any{"type": "inline", "documents": d})
}

func doc(id, content string) map[string]any { return map[string]any{"id": id, "content": content} }

type resp struct {
	status int
	raw    string
	body   map[string]any
}

// do sends a request to the service's app.
func (b *bundle) do(method, path, token string, body any) resp {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		enc, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = strings.NewReader(string(enc))
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := b.app.Test(req, 10000)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	r := resp{status: res.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// bind makes agent of tenant's namespace default compiled, with a manifest
// whose spec.memories.knowledge names indexes.
func (b *bundle) bind(tenant, agent string, indexes ...string) {
	b.t.Helper()
	knowledge := make([]any, len(indexes))
	for i, ix := range indexes {
		knowledge[i] = map[string]any{"endpoint": "http://rag.test", "namespace": "default", "name": ix, "sources": []any{}}
	}
	spec := map[string]any{"agent": map[string]any{"name": agent, "generation": int64(1)}, "memories": map[string]any{"knowledge": knowledge}}
	require.NoError(b.t, b.st.Update(context.Background(), tenant, func(ctx context.Context, tx store.Tx) error {
		a, err := tx.ResourceCreate(ctx, obj(resource.KindAgent, agent, map[string]any{}))
		if err != nil {
			return err
		}
		m := obj(resource.KindCompiledAgentManifest, agent+"-g1", spec)
		m.APIVersion = resource.InternalGroupVersion
		if _, err := tx.ResourceCreate(ctx, m); err != nil {
			return err
		}
		_, err = tx.ResourceUpdateStatus(ctx, a.Key(), map[string]any{"compiledManifest": agent + "-g1"}, a.Metadata.ResourceVersion)
		return err
	}))
}
