package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
)

// backends lists the stores every scenario runs against.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string {
			return "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
		},
		"postgres": func(t *testing.T) string {
			return pgtest.NewDatabase(t)
		},
	}
}

// bundle is what a scenario needs: a running server and its admin key.
type bundle struct {
	url   string
	key   string
	store store.Store
	srv   *server.Server
}

func setup(t *testing.T, storeURL string) *bundle {
	t.Helper()
	return setupWith(t, storeURL, nil)
}

// setupWith is setup with the server's configuration adjusted by tune,
// which may wrap the store; the bundle keeps the unwrapped one.
func setupWith(t *testing.T, storeURL string, tune func(*server.Config)) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, storeURL, backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, created, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	require.True(t, created)
	again, created, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	require.False(t, created, "a second bootstrap must not create anything")
	require.Empty(t, again)

	cfg := server.Config{Store: st, BookmarkInterval: 50 * time.Millisecond}
	if tune != nil {
		tune(&cfg)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	ln := listen(t)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &bundle{url: "http://" + ln.Addr().String(), key: key, store: st, srv: srv}
}

type response struct {
	status int
	body   []byte
	header http.Header
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (b *bundle) do(t *testing.T, method, path, contentType string, body []byte) response {
	t.Helper()
	return b.doAs(t, b.key, method, path, contentType, body)
}

func (b *bundle) doAs(t *testing.T, key, method, path, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, body: out, header: res.Header}
}

func (b *bundle) apply(t *testing.T, yaml string) response {
	t.Helper()
	return b.do(t, http.MethodPost, "/v1/resources/apply", "application/yaml", []byte(yaml))
}

// fleet reads the example fleet as one body.
func fleet(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "fleet")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		sb.WriteString("---\n")
		sb.Write(b)
		sb.WriteString("\n")
	}
	return sb.String()
}

func count(t *testing.T, b *bundle, plural string) int {
	t.Helper()
	r := b.do(t, http.MethodGet, "/v1/namespaces/default/"+plural, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return len(r.json(t)["items"].([]any))
}

func errorCode(t *testing.T, r response) string {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.body)
	require.NotEmpty(t, e["message"])
	return e["code"].(string)
}

func diagnostics(t *testing.T, r response) []map[string]any {
	t.Helper()
	e := r.json(t)["error"].(map[string]any)
	d := e["details"].(map[string]any)["diagnostics"].([]any)
	out := make([]map[string]any, len(d))
	for i, x := range d {
		out[i] = x.(map[string]any)
	}
	return out
}

const toolDoc = `apiVersion: warden.dev/v1alpha1
kind: Tool
metadata:
  name: %s
spec:
  source: function
  sideEffect: read_only
`

func TestFleetApplyCompileAndRead(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))

			r := b.apply(t, fleet(t))
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			body := r.json(t)
			require.Equal(t, "ApplyResult", body["kind"])
			require.Contains(t, body["manifests"], "support-bot-g1")
			for _, it := range body["items"].([]any) {
				item := it.(map[string]any)
				want := "created"
				if item["kind"] == "Environment" {
					want = "unchanged" // bootstrap created dev, staging and prod
				}
				require.Equal(t, want, item["action"], "%v", item)
			}

			// Applying the same body again changes nothing.
			r = b.apply(t, fleet(t))
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			for _, it := range r.json(t)["items"].([]any) {
				require.Equal(t, "unchanged", it.(map[string]any)["action"], "%v", it)
			}

			agent := b.do(t, http.MethodGet, "/v1/namespaces/default/agents/support-bot", "", nil)
			require.Equal(t, http.StatusOK, agent.status)
			status := agent.json(t)["status"].(map[string]any)
			require.Equal(t, "support-bot-g1", status["compiledManifest"])

			m := b.do(t, http.MethodGet, "/v1/namespaces/default/compiledagentmanifests/support-bot-g1", "", nil)
			require.Equal(t, http.StatusOK, m.status, string(m.body))
			manifest := m.json(t)
			require.Equal(t, "internal.warden.dev/v1", manifest["apiVersion"])
			spec := manifest["spec"].(map[string]any)
			require.Equal(t, "openai:gpt-4o", spec["modelRoute"].(map[string]any)["primary"])
			require.Len(t, spec["tools"], 7)

			// A spec change through PATCH bumps the generation and recompiles.
			patch := `{"spec":{"systemPrompt":"Be brief."}}`
			r = b.do(t, http.MethodPatch, "/v1/namespaces/default/agents/support-bot", "application/merge-patch+json", []byte(patch))
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			patched := r.json(t)
			require.EqualValues(t, 2, patched["metadata"].(map[string]any)["generation"])
			require.Equal(t, "support-bot-g2", patched["status"].(map[string]any)["compiledManifest"])

			// Labels only: no new generation.
			r = b.do(t, http.MethodPatch, "/v1/namespaces/default/agents/support-bot", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"support"}}}`))
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			require.EqualValues(t, 2, r.json(t)["metadata"].(map[string]any)["generation"])

			// Lists page with limit and an opaque continue token.
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/tools?limit=3", "", nil)
			require.Equal(t, http.StatusOK, r.status)
			page := r.json(t)
			require.Equal(t, "ToolList", page["kind"])
			require.Len(t, page["items"], 3)
			cont := page["metadata"].(map[string]any)["continue"].(string)
			require.NotEmpty(t, cont)
			seen := map[string]bool{}
			for _, it := range page["items"].([]any) {
				seen[it.(map[string]any)["metadata"].(map[string]any)["name"].(string)] = true
			}
			for cont != "" {
				r = b.do(t, http.MethodGet, "/v1/namespaces/default/tools?limit=3&continue="+cont, "", nil)
				require.Equal(t, http.StatusOK, r.status, string(r.body))
				page = r.json(t)
				for _, it := range page["items"].([]any) {
					n := it.(map[string]any)["metadata"].(map[string]any)["name"].(string)
					require.False(t, seen[n], "duplicate %s across pages", n)
					seen[n] = true
				}
				cont, _ = page["metadata"].(map[string]any)["continue"].(string)
			}
			require.Len(t, seen, 7)

			// Label selector.
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/agents?labelSelector=team%3Dsupport", "", nil)
			require.Equal(t, http.StatusOK, r.status)
			require.Len(t, r.json(t)["items"], 1)
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/agents?labelSelector=team%3Dother", "", nil)
			require.Len(t, r.json(t)["items"], 0)
		})
	}
}

func TestBadInputIsRejectedAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))
			require.Equal(t, http.StatusOK, b.apply(t, fleet(t)).status)
			toolsBefore := count(t, b, "tools")

			cases := []struct {
				name     string
				body     string
				status   int
				code     string
				diagPath string
			}{
				{"malformed yaml", "apiVersion: warden.dev/v1alpha1\nkind: Tool\nmetadata: [unclosed\n", 422, "AdmissionRejected", ""},
				{"unknown kind", "apiVersion: warden.dev/v1alpha1\nkind: Gadget\nmetadata:\n  name: x\nspec: {}\n", 422, "AdmissionRejected", ""},
				{"wrong apiVersion", "apiVersion: warden.dev/v9\nkind: Tool\nmetadata:\n  name: a.b\nspec:\n  source: function\n  sideEffect: read_only\n", 422, "AdmissionRejected", "apiVersion"},
				{"missing name", "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata: {}\nspec:\n  provider: openai\n  model: x\n", 422, "AdmissionRejected", "metadata.name"},
				{"invalid name", "apiVersion: warden.dev/v1alpha1\nkind: Model\nmetadata:\n  name: Not_Valid\nspec:\n  provider: openai\n  model: x\n", 422, "AdmissionRejected", "metadata.name"},
				{"duplicate document", fmt.Sprintf(toolDoc, "dup.one") + "---\n" + fmt.Sprintf(toolDoc, "dup.one"), 422, "AdmissionRejected", ""},
				{"good then dangling reference", fmt.Sprintf(toolDoc, "new.tool") + "---\n" + `apiVersion: warden.dev/v1alpha1
kind: Agent
metadata:
  name: broken-bot
spec:
  framework:
    adapter: langgraph
  modelRoute:
    primary: gpt-4o
  tools:
  - name: no.such_tool
`, 422, "AdmissionRejected", "spec.tools[0].name"},
				{"good then a missing RAG index", fmt.Sprintf(toolDoc, "kb.tool") + "---\n" + `apiVersion: warden.dev/v1alpha1
kind: Agent
metadata:
  name: broken-bot
spec:
  framework:
    adapter: langgraph
  modelRoute:
    primary: gpt-4o
  memory:
    knowledge: [support-kb, no-such-index]
`, 422, "AdmissionRejected", "spec.memory.knowledge[1]"},
				{"system-only kind", "apiVersion: warden.dev/v1alpha1\nkind: ToolCall\nmetadata:\n  name: forged\nspec: {}\n", 403, "Forbidden", "kind"},
				{"empty body", "", 400, "InvalidRequest", ""},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r := b.apply(t, tc.body)
					require.Equal(t, tc.status, r.status, string(r.body))
					require.Equal(t, tc.code, errorCode(t, r))
					if tc.diagPath != "" {
						var paths []string
						for _, d := range diagnostics(t, r) {
							paths = append(paths, d["path"].(string))
						}
						require.Contains(t, paths, tc.diagPath)
					}
				})
			}
			require.Equal(t, toolsBefore, count(t, b, "tools"), "a rejected body must write nothing")
			r := b.do(t, http.MethodGet, "/v1/namespaces/default/agents/broken-bot", "", nil)
			require.Equal(t, http.StatusNotFound, r.status)
			require.Equal(t, "NotFound", errorCode(t, r))

			// Stale resourceVersion: 409 Conflict.
			cur := b.do(t, http.MethodGet, "/v1/namespaces/default/tools/zendesk.search_tickets", "", nil).json(t)
			rv := cur["metadata"].(map[string]any)["resourceVersion"].(string)
			require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, "/v1/namespaces/default/tools/zendesk.search_tickets", "application/merge-patch+json", []byte(`{"spec":{"description":"v2"}}`)).status)
			stale := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"description":"v3"}}`, rv)
			r = b.do(t, http.MethodPatch, "/v1/namespaces/default/tools/zendesk.search_tickets", "application/merge-patch+json", []byte(stale))
			require.Equal(t, http.StatusConflict, r.status, string(r.body))
			require.Equal(t, "Conflict", errorCode(t, r))

			// Tampered continue token.
			page := b.do(t, http.MethodGet, "/v1/namespaces/default/tools?limit=2", "", nil).json(t)
			tok := page["metadata"].(map[string]any)["continue"].(string)
			tampered := []byte(tok)
			tampered[len(tampered)/2] ^= 1
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/tools?limit=2&continue="+string(tampered), "", nil)
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
			require.Equal(t, "InvalidRequest", errorCode(t, r))
			// A token from one kind is refused for another.
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/models?limit=2&continue="+tok, "", nil)
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))

			// Oversized body: 413 in the documented shape.
			big := bytes.Repeat([]byte("#"), server.MaxBodyBytes+1)
			r = b.do(t, http.MethodPost, "/v1/resources/apply", "application/yaml", big)
			require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
			require.Equal(t, "PayloadTooLarge", errorCode(t, r))

			// Status is a subresource; system kinds cannot be edited.
			r = b.do(t, http.MethodPatch, "/v1/namespaces/default/agents/support-bot", "application/merge-patch+json", []byte(`{"status":{"compiledManifest":"x"}}`))
			require.Equal(t, http.StatusUnprocessableEntity, r.status)
			r = b.do(t, http.MethodPatch, "/v1/namespaces/default/compiledagentmanifests/support-bot-g1", "application/merge-patch+json", []byte(`{"spec":{}}`))
			require.Equal(t, http.StatusForbidden, r.status)
			r = b.do(t, http.MethodDelete, "/v1/namespaces/default/compiledagentmanifests/support-bot-g1", "", nil)
			require.Equal(t, http.StatusForbidden, r.status)

			// Unknown resource type and bad selector.
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/gadgets", "", nil)
			require.Equal(t, http.StatusNotFound, r.status)
			r = b.do(t, http.MethodGet, "/v1/namespaces/default/tools?labelSelector=a+in+b", "", nil)
			require.Equal(t, http.StatusBadRequest, r.status)
		})
	}
}

func TestPolicyPreflightRejectsDeniedModel(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	require.Equal(t, http.StatusOK, b.apply(t, fleet(t)).status)
	prod, err := os.ReadFile(filepath.Join("..", "..", "examples", "fleet", "extra", "deploy-prod.yaml"))
	require.NoError(t, err)
	r := b.apply(t, string(prod))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "AdmissionRejected", errorCode(t, r))
	d := diagnostics(t, r)
	require.NotEmpty(t, d)
	require.Equal(t, "PolicyDenied", d[0]["code"])
	require.Regexp(t, `^model-guard@\S+$`, d[0]["policy"])
	require.Contains(t, d[0]["message"], "openai:gpt-4o")

	// validate answers the same and writes nothing either.
	r = b.do(t, http.MethodPost, "/v1/resources/validate", "application/yaml", prod)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, 2, count(t, b, "deployments"))
}

func TestAppliedStatusIsIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	doc := fmt.Sprintf(toolDoc, "forged.status") + "status:\n  phase: Approved\n"
	require.Equal(t, http.StatusOK, b.apply(t, doc).status)
	r := b.do(t, http.MethodGet, "/v1/namespaces/default/tools/forged.status", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Nil(t, r.json(t)["status"], "status is a subresource and apply must not write it")
}

func TestAuthenticationAndAudit(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	for _, key := range []string{"", "wk_not-a-real-key", "some-other-token"} {
		r := b.doAs(t, key, http.MethodGet, "/v1/namespaces/default/agents", "", nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, "Unauthenticated", errorCode(t, r))
	}
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/namespaces/default/agents/ghost", "", nil).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces", "", nil).status)

	var recs []struct{ verb, resource, outcome, actor string }
	err := b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		list, err := r.AuditList(ctx, store.AuditListParams{Limit: 100})
		for _, x := range list {
			recs = append(recs, struct{ verb, resource, outcome, actor string }{x.Verb, x.Resource, x.Outcome, x.Actor})
		}
		return err
	})
	require.NoError(t, err)
	require.Len(t, recs, 3, "every authenticated call is audited: %v", recs)
	require.Equal(t, "list", recs[0].verb)
	require.Equal(t, "apikey:admin", recs[0].actor)
	require.Equal(t, "Agent/default/ghost", recs[1].resource)
	require.Equal(t, "failed", recs[1].outcome)
}

func TestSecretsAreNeverReturned(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "w.db")
	b := setup(t, "sqlite://"+dbPath)
	const canary = "sk-canary-5f1e0c"
	doc := "apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: stripe\nspec:\n  data:\n    apiKey: " + canary + "\n"
	r := b.apply(t, doc)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	for _, path := range []string{"/v1/namespaces/default/secrets/stripe", "/v1/namespaces/default/secrets"} {
		r = b.do(t, http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.NotContains(t, string(r.body), canary)
		require.NotContains(t, string(r.body), "sealed")
		require.Contains(t, string(r.body), "apiKey")
	}

	// At rest: sealed, never the plaintext, not even in the database file.
	require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, r store.Reader) error {
		o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindSecret, Namespace: "default", Name: "stripe"})
		require.NoError(t, err)
		require.NotContains(t, o.Spec, "data")
		require.Contains(t, o.Spec, "sealed")
		return nil
	}))
	for _, f := range []string{dbPath, dbPath + "-wal"} {
		raw, err := os.ReadFile(f)
		if err == nil {
			require.NotContains(t, string(raw), canary, f)
		}
	}

	// Re-applying the same value changes nothing; the diff shows no values.
	r = b.apply(t, doc)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "unchanged", r.json(t)["items"].([]any)[0].(map[string]any)["action"])
	r = b.do(t, http.MethodPost, "/v1/resources/diff", "application/yaml", []byte(doc))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "unchanged", r.json(t)["items"].([]any)[0].(map[string]any)["action"], string(r.body))
	r = b.do(t, http.MethodPost, "/v1/resources/diff", "application/yaml", []byte(strings.Replace(doc, canary, "sk-new", 1)))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NotContains(t, string(r.body), canary)
	require.NotContains(t, string(r.body), "sk-new")
	require.Contains(t, string(r.body), "(redacted, changed)")

	// A client cannot plant sealed values.
	r = b.apply(t, "apiVersion: warden.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: forged\nspec:\n  sealed:\n    k: AAAA\n")
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
}
