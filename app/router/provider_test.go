package router

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/upstream"
)

// TestProviderURLs: each provider id reaches its wire format at the
// right URL with the right key header.
func TestProviderURLs(t *testing.T) {
	t.Parallel()
	type seen struct {
		path, query string
		header      http.Header
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- seen{r.URL.Path, r.URL.RawQuery, r.Header.Clone()}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/messages" {
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(srv.Close)
	req, err := DecodeChatRequest([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, provider, endpoint string
		wantPath, wantQuery      string
		keyHeader, keyValue      string
	}{
		{"openai-compatible", "vllm", srv.URL + "/v1", "/v1/chat/completions", "", "Authorization", "Bearer k"},
		{"openai with an endpoint", "openai", srv.URL + "/v1/", "/v1/chat/completions", "", "Authorization", "Bearer k"},
		{"azure", "azure", srv.URL + "/openai/deployments/gpt4o?api-version=2024-10-21", "/openai/deployments/gpt4o/chat/completions", "api-version=2024-10-21", "api-key", "k"},
		{"anthropic", "anthropic", srv.URL + "/v1", "/v1/messages", "", "x-api-key", "k"},
	} {
		// Over net/http, and over the router's own connections (plain
		// HTTP).
		for _, via := range []struct {
			name string
			ups  *upstream.Pools
		}{{"net/http", nil}, {"own connections", upstream.NewPools(4)}} {
			t.Run(tc.name+"/"+via.name, func(t *testing.T) {
				p, err := newProvider(srv.Client(), via.ups, resource.ModelSpec{Provider: tc.provider, Model: "m", Endpoint: tc.endpoint})
				require.NoError(t, err)
				for range 2 {
					ans, err := p.chat(context.Background(), req, "k")
					require.NoError(t, err)
					require.EqualValues(t, 2, ans.Usage.TotalTokens)
					s := <-got
					require.Equal(t, tc.wantPath, s.path)
					require.Equal(t, tc.wantQuery, s.query)
					require.Equal(t, tc.keyValue, s.header.Get(tc.keyHeader))
					require.Equal(t, "application/json", s.header.Get("Content-Type"))
					if tc.provider != "azure" {
						require.Empty(t, s.header.Get("api-key"))
					}
				}
			})
		}
	}
	_, err = newProvider(srv.Client(), nil, resource.ModelSpec{Provider: "ollama", Model: "m"})
	require.ErrorContains(t, err, "needs spec.endpoint", "an OpenAI-compatible provider without an endpoint cannot be called")
	_, err = newProvider(srv.Client(), nil, resource.ModelSpec{Provider: "azure", Model: "m", Endpoint: "not a url"})
	require.Error(t, err)
}

// TestAnswerUsage reads usage from the last "usage" key, and from the
// whole answer when that fails.
func TestAnswerUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       int64
		err        bool
	}{
		{"last key", `{"choices":[{"message":{"content":"the \"usage\": 5"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, 3, false},
		{"usage in content after", `{"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"x":"\"usage\": nope"}`, 2, false},
		{"none", `{"choices":[]}`, 0, false},
		{"not JSON", `{"usage":`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := answerUsage([]byte(tc.body))
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, u.TotalTokens)
		})
	}
}
