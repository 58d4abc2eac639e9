package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/server"
)

// TestLongPollOutlivesTheReadTimeouts polls a call that awaits approval
// with ?wait= for several times the listener's read-header and read
// timeouts: the poll answers when its wait is over, it is not cut.
func TestLongPollOutlivesTheReadTimeouts(t *testing.T) {
	t.Parallel()
	to := listener.Timeouts{ReadHeader: 100 * time.Millisecond, Read: 100 * time.Millisecond}
	ts := newToolServer(t)
	e := start(t, envOptions{storeURL: "sqlite://" + t.TempDir() + "/w.db", tools: ts, cfg: func(c *server.Config) { c.Timeouts = to }})
	e.apply(fixture(ts.URL))
	call := e.pending(250)

	wait := 8 * to.ReadHeader
	began := time.Now()
	got := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call.name()+"?wait="+wait.String(), e.bot(), nil, nil)
	require.Equal(t, http.StatusAccepted, got.status, string(got.raw))
	require.Equal(t, "AwaitingApproval", got.phase())
	require.GreaterOrEqual(t, time.Since(began), wait, "the poll waited its whole wait")
	require.Equal(t, "nosniff", got.header.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", got.header.Get("Cache-Control"))
	require.NotEmpty(t, got.header.Get("X-Request-Id"))
}
