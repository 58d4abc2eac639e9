package server_test

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/events"
)

// agbomUpdates returns a channel of the server's AgBOMUpdated events.
func agbomUpdates(t *testing.T, b *bundle) <-chan events.Event {
	t.Helper()
	ch := make(chan events.Event, 16)
	stop := b.srv.Bus().Subscribe(func(ev events.Event) {
		if ev.Type == events.AgBOMUpdated {
			ch <- ev
		}
	})
	t.Cleanup(stop)
	return ch
}

func waitEvent(t *testing.T, ch <-chan events.Event) events.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no AgBOMUpdated within 20s")
		return events.Event{}
	}
}

func TestAgBOMEndpoints(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))
			updates := agbomUpdates(t, b)
			require.Equal(t, http.StatusOK, b.apply(t, fleet(t)).status)
			ev := waitEvent(t, updates)
			require.Equal(t, "support-bot-g1", ev.Data["manifest"])

			// The manifest's abomEndpoint names the path served here.
			m := b.do(t, http.MethodGet, "/v1/namespaces/default/compiledagentmanifests/support-bot-g1", "", nil).json(t)
			endpoint := m["spec"].(map[string]any)["observability"].(map[string]any)["abomEndpoint"].(string)
			require.True(t, strings.HasSuffix(endpoint, "/v1/agbom/support-bot"), endpoint)

			r := b.do(t, http.MethodGet, "/v1/agbom/support-bot", "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			require.Contains(t, r.header.Get("Content-Type"), "application/vnd.cyclonedx+json")
			cdx := r.json(t)
			require.Equal(t, "CycloneDX", cdx["bomFormat"])
			require.Equal(t, "1.6", cdx["specVersion"])
			require.Equal(t, "support-bot", cdx["metadata"].(map[string]any)["component"].(map[string]any)["name"])
			require.Contains(t, string(r.body), `"bom-ref": "rag-index:support-kb"`)
			require.Contains(t, string(r.body), `"bom-ref": "knowledge-source:support-handbook"`)

			same := b.do(t, http.MethodGet, "/v1/namespaces/default/agents/support-bot/agbom", "", nil)
			require.Equal(t, http.StatusOK, same.status)
			require.Equal(t, string(r.body), string(same.body), "the convenience path serves the same document")
			gen1 := b.do(t, http.MethodGet, "/v1/agbom/support-bot?namespace=default&generation=1&format=cyclonedx", "", nil)
			require.Equal(t, string(r.body), string(gen1.body))

			spdx := b.do(t, http.MethodGet, "/v1/agbom/support-bot?format=spdx", "", nil)
			require.Equal(t, http.StatusOK, spdx.status)
			require.Equal(t, "application/spdx+json", spdx.header.Get("Content-Type"))
			require.Equal(t, "SPDX-2.3", spdx.json(t)["spdxVersion"])

			swid := b.do(t, http.MethodGet, "/v1/agbom/support-bot?format=swid", "", nil)
			require.Equal(t, http.StatusOK, swid.status)
			var tag struct {
				XMLName xml.Name
				Name    string `xml:"name,attr"`
			}
			require.NoError(t, xml.Unmarshal(swid.body, &tag))
			require.Equal(t, "SoftwareIdentity", tag.XMLName.Local)
			require.Equal(t, "support-bot", tag.Name)

			for _, tc := range []struct {
				path   string
				status int
				code   string
			}{
				{"/v1/agbom/support-bot?format=pdf", 400, "InvalidRequest"},
				{"/v1/agbom/support-bot?generation=zero", 400, "InvalidRequest"},
				{"/v1/agbom/support-bot?generation=9", 404, "NotFound"},
				{"/v1/agbom/nobody", 404, "NotFound"},
				{"/v1/agbom/support-bot?namespace=nowhere", 404, "NotFound"},
				{"/v1/agbom/support-bot/diff", 400, "InvalidRequest"},
				{"/v1/agbom/support-bot/diff?from=1&to=7", 404, "NotFound"},
			} {
				got := b.do(t, http.MethodGet, tc.path, "", nil)
				require.Equal(t, tc.status, got.status, "%s: %s", tc.path, got.body)
				require.Equal(t, tc.code, errorCode(t, got), tc.path)
			}

			refresh := b.do(t, http.MethodPost, "/v1/agbom/support-bot/refresh", "", nil)
			require.Equal(t, http.StatusOK, refresh.status, string(refresh.body))
			require.Equal(t, false, refresh.json(t)["updated"], "the job stored it already")

			// A second generation: a tool more.
			agent := strings.Replace(agentYAML(t), "    - name: k8s.scale_deployment\n", "    - name: k8s.scale_deployment\n    - name: zendesk.reply_internal\n", 1)
			require.NotEqual(t, agentYAML(t), agent)
			body := agent + "\n---\n" + `apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: zendesk.reply_internal}
spec: {source: function, sideEffect: local_write}
`
			applied := b.apply(t, body)
			require.Equal(t, http.StatusOK, applied.status, string(applied.body))
			require.Equal(t, "support-bot-g2", waitEvent(t, updates).Data["manifest"])
			d := b.do(t, http.MethodGet, "/v1/agbom/support-bot/diff?from=1&to=2", "", nil)
			require.Equal(t, http.StatusOK, d.status, string(d.body))
			var diff struct {
				Added []struct {
					Ref string `json:"ref"`
				} `json:"added"`
				Removed []any `json:"removed"`
			}
			require.NoError(t, json.Unmarshal(d.body, &diff))
			require.Len(t, diff.Added, 1)
			require.Equal(t, "tool:zendesk.reply_internal", diff.Added[0].Ref)
			require.Empty(t, diff.Removed)

			// A third generation drops the RAG index: the diff shows it
			// removed with the knowledge source only it read, and the
			// reverse diff shows them added.
			third := strings.Replace(agent, "    knowledge: [support-kb]\n", "", 1)
			require.NotEqual(t, agent, third)
			applied = b.apply(t, third)
			require.Equal(t, http.StatusOK, applied.status, string(applied.body))
			require.Equal(t, "support-bot-g3", waitEvent(t, updates).Data["manifest"])
			refs := func(path string) (added, removed []string) {
				t.Helper()
				d := b.do(t, http.MethodGet, path, "", nil)
				require.Equal(t, http.StatusOK, d.status, string(d.body))
				var diff struct {
					Added, Removed []struct {
						Ref string `json:"ref"`
					}
				}
				require.NoError(t, json.Unmarshal(d.body, &diff))
				for _, c := range diff.Added {
					added = append(added, c.Ref)
				}
				for _, c := range diff.Removed {
					removed = append(removed, c.Ref)
				}
				return added, removed
			}
			added, removed := refs("/v1/agbom/support-bot/diff?from=2&to=3")
			require.Empty(t, added)
			require.Equal(t, []string{"knowledge-source:support-handbook", "rag-index:support-kb"}, removed)
			added, removed = refs("/v1/agbom/support-bot/diff?from=3&to=2")
			require.Equal(t, []string{"knowledge-source:support-handbook", "rag-index:support-kb"}, added)
			require.Empty(t, removed)
		})
	}
}

// agentYAML is the example fleet's agent document.
func agentYAML(t *testing.T) string {
	t.Helper()
	for _, doc := range strings.Split(fleet(t), "---\n") {
		if strings.Contains(doc, "kind: Agent\n") {
			return doc
		}
	}
	t.Fatal("no agent in the fleet")
	return ""
}

// TestAgBOMTenancyAndRoles: another tenant's credential finds nothing, a
// viewer reads but cannot refresh, a key of another namespace gets 403.
func TestAgBOMTenancyAndRoles(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mk(t))
			updates := agbomUpdates(t, b)
			require.Equal(t, http.StatusOK, b.apply(t, fleet(t)+"\n---\napiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata: {name: other}\n").status)
			waitEvent(t, updates)

			other := newTenant(t, b.store, "tenant-b")
			for _, tc := range []struct{ method, path string }{
				{http.MethodGet, "/v1/agbom/support-bot?namespace=default"},
				{http.MethodGet, "/v1/agbom/support-bot?namespace=default&format=spdx"},
				{http.MethodGet, "/v1/namespaces/default/agents/support-bot/agbom"},
				{http.MethodPost, "/v1/agbom/support-bot/refresh?namespace=default"},
				{http.MethodGet, "/v1/agbom/support-bot/diff?namespace=default&from=1&to=1"},
			} {
				r := b.doAs(t, other, tc.method, tc.path, "", nil)
				require.Equal(t, http.StatusNotFound, r.status, "%s %s: %s", tc.method, tc.path, r.body)
				for _, leak := range []string{"sha256", "CycloneDX", "SPDX", "openai"} {
					require.NotContains(t, string(r.body), leak)
				}
			}

			viewer := createKey(t, b, b.key, `{"name":"bom-viewer","namespace":"default","role":"viewer"}`).json(t)["secret"].(string)
			require.Equal(t, http.StatusOK, b.doAs(t, viewer, http.MethodGet, "/v1/agbom/support-bot", "", nil).status,
				"a viewer reads; its credential names the namespace")
			require.Equal(t, http.StatusOK, b.doAs(t, viewer, http.MethodGet, "/v1/agbom/support-bot/diff?from=1&to=1", "", nil).status)
			r := b.doAs(t, viewer, http.MethodPost, "/v1/agbom/support-bot/refresh", "", nil)
			require.Equal(t, http.StatusForbidden, r.status, string(r.body))

			elsewhere := createKey(t, b, b.key, `{"name":"other-viewer","namespace":"other","role":"viewer"}`).json(t)["secret"].(string)
			r = b.doAs(t, elsewhere, http.MethodGet, "/v1/agbom/support-bot?namespace=default", "", nil)
			require.Equal(t, http.StatusForbidden, r.status, string(r.body))
			r = b.doAs(t, elsewhere, http.MethodGet, "/v1/agbom/support-bot", "", nil)
			require.Equal(t, http.StatusNotFound, r.status, "its own namespace has no such agent: %s", r.body)

			require.Equal(t, http.StatusUnauthorized, b.doAs(t, "", http.MethodGet, "/v1/agbom/support-bot", "", nil).status)
		})
	}
}
