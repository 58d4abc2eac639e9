package gateway_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
)

// TestExpiredTokenIsRefused issues a token ten minutes in the past (the
// lifetime is five) and calls with it now.
func TestExpiredTokenIsRefused(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	ts := newToolServer(t)
	e := start(t, envOptions{storeURL: "sqlite://" + t.TempDir() + "/w.db", tools: ts, cfg: func(c *server.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}})
	e.apply(fixture(ts.URL))
	offset.Store(int64(-10 * time.Minute))
	old := e.bot()
	offset.Store(0)
	r := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", old, map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, string(r.raw))
	require.Equal(t, "Unauthenticated", r.code())
	fresh := do(t, http.MethodPost, e.gwURL+"/v1/tool-calls", e.bot(), map[string]any{"tool": "crm.search", "input": map[string]any{"query": "x"}}, nil)
	require.Equal(t, http.StatusOK, fresh.status, string(fresh.raw))
	require.Equal(t, 1, ts.count("/search"))
}
