package memory_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/memory"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/app/store/storetest"
	"github.com/warden-dev/warden/app/workload"
)

// TestCrossTenantPostgres proves on Postgres (row-level security) that
// another tenant's agent and keys can neither read, write nor delete a
// tenant's items, whatever they name.
func TestCrossTenantPostgres(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pgtest.NewDatabase(t), memory.Config{})
	a := h.tenant
	b := storetest.NewTenant()
	h.seed(b)
	botA := h.token(a, "bot", workload.AudienceMemory)
	botB := h.token(b, "bot", workload.AudienceMemory)

	st, body, raw := h.do("POST", "/v1/memory/notes/write", botA, map[string]any{"text": "tenant A secret plan"})
	require.Equal(t, 201, st, raw)
	idA := body["id"].(string)

	// B's agent, on the same memory name, sees only B's (no) items.
	st, body, raw = h.do("POST", "/v1/memory/notes/query", botB, map[string]any{"text": "secret plan"})
	require.Equal(t, 200, st, raw)
	require.Empty(t, itemsOf(body))
	require.NotContains(t, raw, "tenant A")
	// B's admin key neither.
	_, body, raw = h.do("POST", "/v1/memory/notes/query", h.keys[b+"/admin"], map[string]any{})
	require.Empty(t, itemsOf(body), raw)
	// Deleting A's item by its id from B finds nothing.
	st, _, raw = h.do("DELETE", "/v1/memory/notes/items/"+idA, botB, nil)
	require.Equal(t, 404, st, raw)
	st, _, raw = h.do("DELETE", "/v1/memory/notes/items/"+idA, h.keys[b+"/admin"], nil)
	require.Equal(t, 404, st, raw)
	// B's writes land in B.
	st, _, raw = h.do("POST", "/v1/memory/notes/write", botB, map[string]any{"text": "tenant B note"})
	require.Equal(t, 201, st, raw)
	_, body, _ = h.do("POST", "/v1/memory/notes/query", botA, map[string]any{"limit": 100})
	require.Equal(t, []string{"tenant A secret plan"}, textsOf(body), "A sees its item only")

	// Asking for tenant A with B's credential is refused.
	for _, cred := range []string{botB, h.keys[b+"/admin"]} {
		req := httptest.NewRequest("POST", "/v1/memory/notes/query", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set(auth.HeaderTenant, a)
		resp, err := h.app.Test(req, -1)
		require.NoError(t, err)
		require.Contains(t, []int{401, 403}, resp.StatusCode)
		_ = resp.Body.Close()
	}
	// A summary pass from B compacts nothing of A's.
	st, body, raw = h.do("POST", "/v1/memory/shared/summarize", h.keys[b+"/admin"], map[string]any{"keepRecent": 0})
	require.Equal(t, 200, st, raw)
	require.EqualValues(t, 0, body["summarized"])
}
