package router_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/cli"
	"github.com/warden-dev/warden/app/server"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTour runs the README's model router step: `warden demo models`
// serves a provider in an outage and one that answers; examples/router's
// agent falls back from the first to the second.
func TestTour(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.RunWith(ctx, cli.Env{Stdout: out, Stderr: out, LookupEnv: func(string) (string, bool) { return "", false }},
			[]string{"warden", "demo", "models", "--listen", "127.0.0.1:0"})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	addr := regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	require.Eventually(t, func() bool { return addr.MatchString(out.String()) }, 10*time.Second, time.Millisecond)
	base := addr.FindStringSubmatch(out.String())[1]

	yaml, err := os.ReadFile("../../examples/router/models.yaml")
	require.NoError(t, err)
	e.apply(strings.ReplaceAll(string(yaml), "http://127.0.0.1:9091", base))

	tok := e.token(server.LocalTenant, "default", "chat-bot", "dev")
	r := do(t, http.MethodPost, e.url+"/v1/chat/completions", tok, map[string]any{"execution": "tour-1",
		"messages": []any{map[string]any{"role": "user", "content": "Hello router"}}}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "demo-local", r.header.Get("Warden-Model"))
	msg := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "You said: Hello router", msg["content"])

	res := post(t, e.url+"/v1/model/stream", tok, `{"messages":[{"role":"user","content":"Hi"}],"execution":"tour-1"}`, nil)
	data, _ := readSSE(t, res)
	require.Equal(t, "[DONE]", data[len(data)-1])

	x := e.explain(tok, "chat-bot", "tour-1")
	require.Len(t, x.body["decisions"], 2, string(x.raw))
	cs := candidates(t, x, 0)
	require.Equal(t, "failed", cs[0]["outcome"])
	require.Contains(t, cs[0]["detail"], "503")
	require.Equal(t, "selected", cs[1]["outcome"])
	require.Contains(t, out.String(), "outage   503 overloaded")
}
