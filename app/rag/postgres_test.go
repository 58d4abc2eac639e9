package rag_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/rag"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/workload"
)

// TestPostgresCrossTenant runs the service on Postgres, where row-level
// security keeps tenants apart, and tries to reach tenant A's index from
// tenant B every way the API offers.
func TestPostgresCrossTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, pgtest.NewDatabase(t))
	b.apply(tenantA, index("help", "faq"), inline("faq", doc("plans", "Acme merger plans are confidential until May.")))
	b.apply(tenantB, index("help", "faq"), inline("faq", doc("menu", "The Globex cafeteria serves soup on Fridays.")))
	aEditor, bEditor := b.keys[tenantA+"/editor@default"], b.keys[tenantB+"/editor@default"]
	agentB := b.token(tenantB, "default", "bot", workload.AudienceRAG)
	b.bind(tenantB, "bot", "help")

	require.Equal(t, 202, b.do("POST", "/v1/rag/help/index", aEditor, nil).status)
	require.Equal(t, 202, b.do("POST", "/v1/rag/help/index", bEditor, nil).status)

	r := b.do("POST", "/v1/rag/help/retrieve", aEditor, map[string]any{"query": "merger plans"})
	require.Equal(t, 200, r.status, r.raw)
	require.Contains(t, r.raw, "merger")

	for _, tok := range []string{bEditor, agentB} {
		r := b.do("POST", "/v1/rag/help/retrieve", tok, map[string]any{"query": "merger plans confidential"})
		require.Equal(t, 200, r.status, r.raw)
		require.NotContains(t, r.raw, "merger", "tenant B never sees tenant A's chunks")
		r = b.do("GET", "/v1/rag/sources/faq/status", bEditor, nil)
		require.Equal(t, 200, r.status, r.raw)
		require.Contains(t, r.raw, `"documents":1`)
	}

	// Asking for tenant A by header with B's credential is refused.
	req := httptest.NewRequest("POST", "/v1/rag/help/retrieve", strings.NewReader(`{"query":"merger"}`))
	req.Header.Set("Authorization", "Bearer "+bEditor)
	req.Header.Set(auth.HeaderTenant, tenantA)
	res, err := b.app.Test(req, 10000)
	require.NoError(t, err)
	require.Contains(t, []int{401, 403}, res.StatusCode)

	// Tenant B's refresh and purge never touch A's rows, even by name.
	_, err = b.svc.Refresh(context.Background(), tenantB, "default", "help")
	require.NoError(t, err)
	require.NoError(t, b.st.Update(context.Background(), tenantB, func(ctx context.Context, tx store.Tx) error {
		return tx.RAGIndexPurge(ctx, "default", "help")
	}))
	out, err := b.svc.Retrieve(context.Background(), tenantA, "default", rag.RetrieveRequest{Index: "help", Query: "merger"}, rag.Caller{})
	require.NoError(t, err)
	require.Len(t, out.Results, 1)
	out, err = b.svc.Retrieve(context.Background(), tenantB, "default", rag.RetrieveRequest{Index: "help", Query: "merger soup"}, rag.Caller{})
	require.NoError(t, err)
	require.Empty(t, out.Results)
}
