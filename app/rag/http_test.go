package rag_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/workload"
)

// TestHTTPScenarios drives the API through its scenario table: who may
// index and retrieve, and what bad input answers.
func TestHTTPScenarios(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.apply(tenantA, index("help", "faq"), inline("faq", doc("refunds", refundDoc), doc("shipping", shippingDoc)))
	b.apply(tenantB, index("help", "faq"), inline("faq", doc("secret", "Globex launch codes are in the vault.")))
	b.apply(tenantA, index("internal", "faq"))
	b.bind(tenantA, "bot", "help")
	b.bind(tenantA, "uncompiled")
	b.bind(tenantB, "bot", "help")

	viewer, editor, admin := b.keys[tenantA+"/viewer@default"], b.keys[tenantA+"/editor@default"], b.keys[tenantA+"/admin@default"]
	otherNS := b.keys[tenantA+"/editor@other"]
	bEditor := b.keys[tenantB+"/editor@default"]
	agent := b.token(tenantA, "default", "bot", workload.AudienceRAG)
	wrongAud := b.token(tenantA, "default", "bot", workload.AudienceToolGateway)
	agentB := b.token(tenantB, "default", "bot", workload.AudienceRAG)
	query := map[string]any{"query": "refund for my order"}

	// Index first, as an editor, so that retrievals have something.
	r := b.do("POST", "/v1/rag/help/index", editor, nil)
	require.Equal(t, 202, r.status, r.raw)
	require.Equal(t, "help", r.body["index"])
	require.NotZero(t, r.body["job"])

	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		contains, notContains     []string
	}{
		{name: "no credential", method: "POST", path: "/v1/rag/help/retrieve", body: query, status: 401, contains: []string{"Unauthenticated", "warden:rag"}},
		{name: "bad credential", method: "POST", path: "/v1/rag/help/retrieve", token: "wk_nope", body: query, status: 401},
		{name: "token of another audience", method: "POST", path: "/v1/rag/help/retrieve", token: wrongAud, body: query, status: 401},
		{name: "viewer retrieves", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: query, status: 200,
			contains: []string{`"document":"refunds"`, `"ranking":"bm25"`, `"score":`, `"citation":`}},
		{name: "agent retrieves", method: "POST", path: "/v1/rag/help/retrieve", token: agent, body: query, status: 200, contains: []string{"refunds"}},
		{name: "agent retrieves from an index its manifest does not name", method: "POST", path: "/v1/rag/internal/retrieve", token: agent, body: query, status: 403,
			contains: []string{`"code":"Forbidden"`, `does not name RAG index \"internal\" in its compiled manifest bot-g1`, `"manifest":"bot-g1"`}},
		{name: "agent whose manifest names no index", method: "POST", path: "/v1/rag/help/retrieve", token: b.token(tenantA, "default", "uncompiled", workload.AudienceRAG),
			body: query, status: 403, contains: []string{"uncompiled-g1"}},
		{name: "agent that does not exist", method: "POST", path: "/v1/rag/help/retrieve", token: b.token(tenantA, "default", "ghost", workload.AudienceRAG),
			body: query, status: 403, contains: []string{`agent \"ghost\" does not exist`}},
		{name: "retrieve, index in the body", method: "POST", path: "/v1/rag/retrieve", token: viewer,
			body: map[string]any{"index": "help", "query": "shipping", "topK": 1}, status: 200, contains: []string{`"document":"shipping"`}},
		{name: "viewer may not index", method: "POST", path: "/v1/rag/help/index", token: viewer, status: 403, contains: []string{"Forbidden", "rag/index"}},
		{name: "agent may not index", method: "POST", path: "/v1/rag/help/index", token: agent, status: 403},
		{name: "admin indexes, index in the body", method: "POST", path: "/v1/rag/index", token: admin, body: map[string]any{"index": "help"}, status: 202},
		{name: "index without a name", method: "POST", path: "/v1/rag/index", token: admin, body: map[string]any{}, status: 400, contains: []string{"name the index"}},
		{name: "index of a missing index", method: "POST", path: "/v1/rag/nope/index", token: admin, status: 404, contains: []string{"NotFound"}},
		{name: "other namespace's key", method: "POST", path: "/v1/rag/help/retrieve", token: otherNS, body: query, status: 404, contains: []string{"namespace \\\"other\\\""}},
		{name: "other namespace's key, asking for default", method: "POST", path: "/v1/rag/help/retrieve?namespace=default", token: otherNS, body: query, status: 403},
		{name: "agent asking for another namespace", method: "POST", path: "/v1/rag/help/retrieve?namespace=other", token: agent, body: query, status: 403},
		{name: "tenant B sees its own index only", method: "POST", path: "/v1/rag/help/retrieve", token: bEditor, body: map[string]any{"query": "refund launch"}, status: 200,
			notContains: []string{"refunds", "Refunds"}},
		{name: "tenant B's agent", method: "POST", path: "/v1/rag/help/retrieve", token: agentB, body: query, status: 200, notContains: []string{"Refunds"}},
		{name: "empty body", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, status: 400, contains: []string{"InvalidRequest", "empty"}},
		{name: "not JSON", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: "{", status: 400},
		{name: "unknown field", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"query": "x", "k": 3}, status: 400, contains: []string{"unknown field"}},
		{name: "empty query", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"query": "  "}, status: 400, contains: []string{"query is required"}},
		{name: "topK too large", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"query": "x", "topK": 1000}, status: 400},
		{name: "query too long", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"query": strings.Repeat("a", 5000)}, status: 400},
		{name: "body names another index", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"index": "x", "query": "x"}, status: 400},
		{name: "bad index name", method: "POST", path: "/v1/rag/Bad_Name/retrieve", token: viewer, body: query, status: 400},
		{name: "bad source filter", method: "POST", path: "/v1/rag/help/retrieve", token: viewer, body: map[string]any{"query": "x", "filter": map[string]any{"sources": []string{"../x"}}}, status: 400},
		{name: "bad namespace", method: "POST", path: "/v1/rag/help/retrieve?namespace=Bad!", token: viewer, body: query, status: 400},
		{name: "missing index", method: "POST", path: "/v1/rag/nope/retrieve", token: viewer, body: query, status: 404},
		{name: "source status", method: "GET", path: "/v1/rag/sources/faq/status", token: viewer, status: 200,
			contains: []string{`"phase":"Ready"`, `"documents":2`, `"index":"help"`, `"lastSyncAt"`}},
		{name: "agent may not read source status", method: "GET", path: "/v1/rag/sources/faq/status", token: agent, status: 403},
		{name: "missing source", method: "GET", path: "/v1/rag/sources/nope/status", token: viewer, status: 404},
		{name: "unknown path", method: "GET", path: "/v1/rag/help", token: viewer, status: 404},
		{name: "wrong method", method: "GET", path: "/v1/rag/help/retrieve", token: viewer, status: 400, contains: []string{"not allowed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(tc.method, tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, r.status, r.raw)
			for _, s := range tc.contains {
				require.Contains(t, r.raw, s)
			}
			for _, s := range tc.notContains {
				require.NotContains(t, r.raw, s)
			}
			if tc.status >= 400 {
				require.Contains(t, r.raw, `"error":{"code":`)
			}
		})
	}

	// Each refused retrieval is an audit record of its tenant, naming the
	// index and the reason; tenant B's log has none of A's.
	denied := b.deniedRetrievals(tenantA)
	require.Contains(t, denied, "RAGIndex/internal Forbidden: agent \"bot\" does not name RAG index \"internal\" in its compiled manifest bot-g1: list it in the Agent's spec.memory.knowledge")
	require.Contains(t, denied, "RAGIndex/help Forbidden: agent \"ghost\" does not exist in namespace \"default\"")
	require.Empty(t, b.deniedRetrievals(tenantB))
}

// deniedRetrievals lists tenant's audit records of refused retrievals as
// "<resource> <reason>".
func (b *bundle) deniedRetrievals(tenant string) []string {
	b.t.Helper()
	var out []string
	require.NoError(b.t, b.st.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		recs, err := r.AuditList(ctx, store.AuditListParams{Limit: 1000})
		for _, rec := range recs {
			if rec.Verb == "rag/retrieve" && rec.Outcome == audit.OutcomeDenied {
				out = append(out, rec.Resource+" "+rec.Reason)
			}
		}
		return err
	}))
	return out
}
