package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
)

func TestMCPCommands(t *testing.T) {
	t.Parallel()
	fx := setup(t)
	server := map[string]any{"apiVersion": "warden.dev/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": "fake", "namespace": "default"},
		"spec":     map[string]any{"url": "http://x", "pinnedVersion": "1.0.0@sha256:0123456789abcdef0123"},
		"status": map[string]any{"server": map[string]any{"name": "fake", "version": "1.0.1"},
			"tools":      []any{map[string]any{"name": "echo"}, map[string]any{"name": "other"}},
			"drift":      map[string]any{"version": "1.0.1", "changes": []any{map[string]any{"tool": "echo", "change": "changed"}}},
			"quarantine": map[string]any{"reason": "drift from the pin"}},
	}
	var mu sync.Mutex
	var seen []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/mcp/discover" {
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "MCPServerList", "items": []any{server}})
			return
		}
		if strings.HasSuffix(r.URL.Path, "/unquarantine") {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"Conflict","message":"drifts from its pin"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(server)
	}))
	t.Cleanup(gw.Close)

	r := fx.run(t, nil, "", "mcp", "discover", "--mcp-server", gw.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "VERSION")
	require.Contains(t, r.stdout, "1.0.1")
	require.Contains(t, r.stdout, "1.0.0@0123456789ab")
	require.Contains(t, r.stdout, "echo(changed)")
	require.Contains(t, r.stdout, "yes: drift from the pin")

	r = fx.run(t, map[string]string{envMCPServer: gw.URL}, "", "mcp", "quarantine", "fake", "--reason", "looks odd")
	require.Equal(t, 0, r.code, r.stderr)
	r = fx.run(t, nil, "", "mcp", "unquarantine", "fake", "--mcp-server", gw.URL)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "drifts from its pin")
	r = fx.run(t, nil, "", "mcp", "pin", "fake", "--mcp-server", gw.URL, "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"pinnedVersion"`)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 4)
	require.Equal(t, "POST /v1/mcp/discover?namespace=default Bearer "+testToken+" {}", seen[0])
	require.Equal(t, "POST /v1/mcp/fake/quarantine?namespace=default Bearer "+testToken+` {"reason":"looks odd"}`, seen[1])
	require.True(t, strings.HasPrefix(seen[3], "POST /v1/mcp/fake/pin?namespace=default "))
}

func TestGetMCPServersColumns(t *testing.T) {
	t.Parallel()
	o := obj(resource.KindMCPServer, "default", "docs", map[string]any{"url": "http://x/mcp", "pinnedVersion": "1.0.0@sha256:abcdef0123456789abcdef"}, nil)
	o.Status = map[string]any{"server": map[string]any{"name": "docs", "version": "1.1.0"},
		"tools": []any{map[string]any{"name": "search"}},
		"drift": map[string]any{"version": "1.1.0"}, "quarantine": map[string]any{"reason": "drift from the pin: version"}}
	fx := setup(t, o)
	r := fx.run(t, nil, "", "get", "mcpservers")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"VERSION", "PIN", "DRIFT", "QUARANTINE", "TOOLS", "1.1.0", "1.0.0@abcdef012345", "version 1.1.0", "yes: drift from the pin: version"} {
		require.Contains(t, r.stdout, want)
	}
}
