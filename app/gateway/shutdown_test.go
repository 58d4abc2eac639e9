package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Stopping Warden lets the calls in flight finish: the listener closes,
// the tool's answer still arrives, and the call's result is recorded before
// the gateway's recorder stops.
func TestShutdownLetsCallsInFlightFinish(t *testing.T) {
	t.Parallel()
	for name, url := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, url(t))
			t.Cleanup(func() {
				select {
				case <-e.tools.hold:
				default:
					close(e.tools.hold)
				}
			})
			body, err := json.Marshal(map[string]any{"tool": "tickets.slow", "input": map[string]any{"title": "x"}})
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.gwURL+"/v1/tool-calls", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+e.bot())
			req.Header.Set("Content-Type", "application/json")
			type answer struct {
				status int
				body   string
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- answer{body: err.Error()}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				answered <- answer{status: resp.StatusCode, body: string(b)}
			}()
			require.Eventually(t, func() bool { return e.tools.count("/slow") == 1 }, 30*time.Second, time.Millisecond)

			stopped := make(chan struct{})
			go func() {
				e.stop()
				close(stopped)
			}()
			// Runs before the env's own cleanup, which must not stop it twice.
			t.Cleanup(func() { <-stopped })
			// Shutting down: the gateway takes no new connections.
			host := strings.TrimPrefix(e.gwURL, "http://")
			require.Eventually(t, func() bool {
				c, err := net.Dial("tcp", host)
				if err != nil {
					return true
				}
				_ = c.Close()
				return false
			}, 30*time.Second, time.Millisecond)
			close(e.tools.hold)
			a := <-answered
			require.Equal(t, http.StatusOK, a.status, a.body)
			require.Contains(t, a.body, `"phase":"Succeeded"`)
		})
	}
}
