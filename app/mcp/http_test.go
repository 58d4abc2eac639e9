package mcp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/server"
)

// TestHTTPScenarios: credentials and roles of the operator endpoints, the
// error body and the request id.
func TestHTTPScenarios(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends()["sqlite"](t))
	bot := e.token(server.LocalTenant, "bot")
	for _, tt := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"discover without a credential", http.MethodPost, "/v1/mcp/discover", "", nil, http.StatusUnauthorized, "Unauthenticated"},
		{"an agent may not discover", http.MethodPost, "/v1/mcp/discover", bot, nil, http.StatusForbidden, "Forbidden"},
		{"an agent may not pin", http.MethodPost, "/v1/mcp/fake/pin", bot, nil, http.StatusForbidden, "Forbidden"},
		{"an agent may not lift a quarantine", http.MethodPost, "/v1/mcp/fake/unquarantine", bot, nil, http.StatusForbidden, "Forbidden"},
		{"unknown server", http.MethodPost, "/v1/mcp/nope/quarantine", e.admin, nil, http.StatusNotFound, "NotFound"},
		{"bad body", http.MethodPost, "/v1/mcp/discover", e.admin, "[1]", http.StatusBadRequest, "InvalidRequest"},
		{"unknown path", http.MethodGet, "/v1/mcp/nothing", e.admin, nil, http.StatusNotFound, "NotFound"},
		{"/mcp without a token", http.MethodPost, "/mcp", "", map[string]any{}, http.StatusUnauthorized, "Unauthenticated"},
		{"/mcp with an operator key", http.MethodPost, "/mcp", e.admin, map[string]any{}, http.StatusUnauthorized, "Unauthenticated"},
		{"/mcp with a forged token", http.MethodPost, "/mcp", "eyJhbGciOiJFZERTQSJ9.eyJleHAiOjk5OTk5OTk5OTl9.c2ln", map[string]any{}, http.StatusUnauthorized, "Unauthenticated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, e.mcpURL+tt.path, tt.token, tt.body)
			require.Equal(t, tt.status, r.status, string(r.raw))
			require.NotEmpty(t, r.header.Get("X-Request-Id"))
			if tt.code != "" {
				require.Equal(t, tt.code, r.body["error"].(map[string]any)["code"], string(r.raw))
			}
		})
	}
}
