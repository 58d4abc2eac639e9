package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
)

func TestTokenCommand(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/auth/token" {
			fail(w, 404, apierr.New(apierr.CodeNotFound, "no route"))
			return
		}
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		if body["api_key"] != "wk_agent" && body["api_key"] != testToken {
			fail(w, 401, apierr.New(apierr.CodeUnauthenticated, "the API key is unknown, revoked or expired"))
			return
		}
		if body["agent"] != "triage" {
			fail(w, 403, apierr.New(apierr.CodeForbidden, "the credential is bound to agent \"triage\""))
			return
		}
		reply(w, map[string]any{"access_token": "eyJ.a.b", "token_type": "Bearer", "expires_in": 300, "issued_token_type": "urn:ietf:params:oauth:token-type:jwt"})
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		stdout   string
		stderr   string
		wantBody map[string]string
	}{
		{name: "prints the token only", args: []string{"token", "--agent", "triage", "--api-key", "wk_agent", "--env", "dev"}, code: ExitOK, stdout: "eyJ.a.b\n",
			wantBody: map[string]string{"grant_type": "api_key", "api_key": "wk_agent", "agent": "triage", "environment": "dev", "audience": "warden:tool-gateway"}},
		{name: "key from WARDEN_AGENT_KEY, namespace and audience", args: []string{"token", "--agent", "triage", "-n", "support", "--audience", "warden:model-router"},
			env: map[string]string{"WARDEN_AGENT_KEY": "wk_agent"}, code: ExitOK, stdout: "eyJ.a.b\n",
			wantBody: map[string]string{"grant_type": "api_key", "api_key": "wk_agent", "agent": "triage", "namespace": "support", "audience": "warden:model-router"}},
		{name: "falls back to the current credential", args: []string{"token", "--agent", "triage"}, code: ExitOK, stdout: "eyJ.a.b\n",
			wantBody: map[string]string{"grant_type": "api_key", "api_key": testToken, "agent": "triage", "audience": "warden:tool-gateway"}},
		{name: "json output", args: []string{"token", "--agent", "triage", "-o", "json"}, code: ExitOK, stdout: "\"expires_in\": 300"},
		{name: "wrong agent", args: []string{"token", "--agent", "other"}, code: ExitRejected, stderr: "Forbidden"},
		{name: "bad key", args: []string{"token", "--agent", "triage", "--api-key", "wk_bad"}, code: ExitUnauthenticated, stderr: "Unauthenticated"},
		{name: "agent required", args: []string{"token"}, code: ExitUsage, stderr: "--agent is required"},
		{name: "bad output", args: []string{"token", "--agent", "triage", "-o", "yaml"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := &fixture{home: t.TempDir()}
			env := map[string]string{"WARDEN_SERVER": srv.URL, "WARDEN_TOKEN": testToken}
			for k, v := range tt.env {
				env[k] = v
			}
			mu.Lock()
			got = nil
			mu.Unlock()
			res := fx.run(t, env, "", tt.args...)
			require.Equal(t, tt.code, res.code, "stdout=%s stderr=%s", res.stdout, res.stderr)
			if tt.code == ExitOK && tt.stdout != "" && !strings.Contains(tt.stdout, "expires_in") {
				require.Equal(t, tt.stdout, res.stdout)
			} else {
				require.Contains(t, res.stdout, tt.stdout)
			}
			require.Contains(t, res.stderr, tt.stderr)
			if tt.wantBody != nil {
				mu.Lock()
				require.Equal(t, []map[string]string{tt.wantBody}, got)
				mu.Unlock()
			}
		})
	}
}
