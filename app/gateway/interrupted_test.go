package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
)

// A gateway that stops while a tool runs leaves its call Running. Once the
// tool's time limit has passed, the start-up sweep of a gateway on the same
// store finishes the call as Failed (Unavailable: the outcome is unknown)
// and releases its claim, so that a retry runs the tool again.
func TestInterruptedCallIsFinished(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			storeURL := url(t)
			ts := newToolServer(t)
			st, err := backend.Open(ctx, storeURL, backend.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			first := start(t, envOptions{st: st, storeURL: storeURL, tools: ts})
			first.apply(fixture(ts.URL))
			body, err := json.Marshal(map[string]any{"tool": "tickets.slow", "input": map[string]any{"title": "x"}})
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, first.gwURL+"/v1/tool-calls", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+first.bot())
			req.Header.Set("Content-Type", "application/json")
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}()
			// Whatever fails below, the held request ends with the test.
			t.Cleanup(func() {
				select {
				case <-ts.hold:
				default:
					close(ts.hold)
				}
			})
			// The tool has the request: the call is recorded Running.
			require.Eventually(t, func() bool { return ts.count("/slow") == 1 }, 30*time.Second, time.Millisecond)
			var running []*resource.Object
			require.NoError(t, st.View(ctx, "default", func(ctx context.Context, r store.Reader) error {
				sel, err := resource.ParseSelector("status.phase=Running")
				require.NoError(t, err)
				running, err = store.ListAll(ctx, r, resource.KindToolCall, sel)
				return err
			}))
			require.Len(t, running, 1)
			call := running[0].Metadata.Name

			// The first gateway is as good as dead. Another starts on the
			// same store an hour later (past the tool's 30 s and the grace).
			later := func() time.Time { return time.Now().Add(time.Hour) }
			second := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, admin: first.admin,
				cfg: func(c *server.Config) { c.Now = later }})
			// Before the limit, a sweep leaves the call alone.
			now := start(t, envOptions{st: st, storeURL: storeURL, tools: ts, admin: first.admin})
			require.NoError(t, now.srv.Gateway().Sweep(ctx))
			require.Equal(t, "Running", do(t, http.MethodGet, now.gwURL+"/v1/tool-calls/"+call, now.bot(), nil, nil).phase())

			require.NoError(t, second.srv.Gateway().Sweep(ctx))
			got := do(t, http.MethodGet, second.gwURL+"/v1/tool-calls/"+call, second.bot(), nil, nil)
			require.Equal(t, "Failed", got.phase(), string(got.raw))
			failure, _ := got.output()["error"].(map[string]any)
			require.Equal(t, "Unavailable", failure["code"], string(got.raw))
			require.Contains(t, failure["message"], "whether the tool acted is unknown")
			require.Equal(t, map[string]any{"interrupted": true}, failure["details"])

			// The claim is released: the same call runs the tool again.
			close(ts.hold)
			<-answered // the first gateway's late result lands on the old record
			retry := second.call("tickets.slow", map[string]any{"title": "x"}, nil)
			require.Equal(t, "Succeeded", retry.phase(), string(retry.raw))
			require.NotEqual(t, call, retry.name())
			require.Empty(t, retry.header.Get("Idempotent-Replayed"))
			require.Equal(t, 2, ts.count("/slow"))
		})
	}
}
