package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
)

func setup(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(srv.URL, "tok")
}

func writeErr(w http.ResponseWriter, status int, e *apierr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apierr.Body{Error: e})
}

func TestRequestsFollowTheContract(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, query, ctype, auth, body string }
	tests := []struct {
		name string
		call func(ctx context.Context, c *Client) error
		want seen
	}{
		{
			name: "apply",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Apply(ctx, []byte("kind: Agent\n"))
				return err
			},
			want: seen{method: "POST", path: "/v1/resources/apply", ctype: ContentTypeYAML, auth: "Bearer tok", body: "kind: Agent\n"},
		},
		{
			name: "validate",
			call: func(ctx context.Context, c *Client) error { _, err := c.Validate(ctx, []byte("x")); return err },
			want: seen{method: "POST", path: "/v1/resources/validate", ctype: ContentTypeYAML, auth: "Bearer tok", body: "x"},
		},
		{
			name: "diff",
			call: func(ctx context.Context, c *Client) error { _, err := c.Diff(ctx, []byte("x")); return err },
			want: seen{method: "POST", path: "/v1/resources/diff", ctype: ContentTypeYAML, auth: "Bearer tok", body: "x"},
		},
		{
			name: "get namespaced",
			call: func(ctx context.Context, c *Client) error { _, err := c.Get(ctx, "agent", "team-a", "bot"); return err },
			want: seen{method: "GET", path: "/v1/namespaces/team-a/agents/bot", auth: "Bearer tok"},
		},
		{
			name: "get tenant scope",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Get(ctx, "namespaces", "ignored", "team-a")
				return err
			},
			want: seen{method: "GET", path: "/v1/namespaces/team-a", auth: "Bearer tok"},
		},
		{
			name: "list with options",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.List(ctx, "tools", "default", ListOptions{Selector: "team=a", FieldSelector: "spec.source=rest", Limit: 5, Continue: "abc"})
				return err
			},
			want: seen{method: "GET", path: "/v1/namespaces/default/tools", query: "continue=abc&fieldSelector=spec.source%3Drest&labelSelector=team%3Da&limit=5", auth: "Bearer tok"},
		},
		{
			name: "patch",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Patch(ctx, "Tool", "default", "zendesk.reply", []byte(`{"spec":{"costPerCall":1}}`))
				return err
			},
			want: seen{method: "PATCH", path: "/v1/namespaces/default/tools/zendesk.reply", ctype: ContentTypeMergePatch, auth: "Bearer tok", body: `{"spec":{"costPerCall":1}}`},
		},
		{
			name: "delete",
			call: func(ctx context.Context, c *Client) error { return c.Delete(ctx, "models", "default", "gpt") },
			want: seen{method: "DELETE", path: "/v1/namespaces/default/models/gpt", auth: "Bearer tok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan seen, 1)
			c := setup(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)}
				_, _ = io.WriteString(w, "{}")
			})
			require.NoError(t, tt.call(t.Context(), c))
			require.Equal(t, tt.want, <-got)
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantStatus int
		wantCode   string
		wantDiags  int
	}{
		{
			name: "admission rejected with diagnostics",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				writeErr(w, 422, apierr.New(apierr.CodeAdmissionRejected, "1 problem").WithDetails(map[string]any{
					"diagnostics": []map[string]any{{"document": 1, "kind": "Tool", "name": "z.r", "path": "spec.sideEffect", "code": "NotSupported", "message": "bad"}},
				}))
			},
			wantStatus: 422, wantCode: apierr.CodeAdmissionRejected, wantDiags: 1,
		},
		{
			name: "unauthenticated",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				writeErr(w, 401, apierr.New(apierr.CodeUnauthenticated, "no token"))
			},
			wantStatus: 401, wantCode: apierr.CodeUnauthenticated,
		},
		{
			name:       "body that is not the documented shape",
			handler:    func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "upstream broke", http.StatusBadGateway) },
			wantStatus: 502, wantCode: apierr.CodeToolFailed,
		},
		{
			name:       "empty 404",
			handler:    func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) },
			wantStatus: 404, wantCode: apierr.CodeNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := setup(t, tt.handler)
			_, err := c.Apply(t.Context(), []byte("x"))
			require.Error(t, err)
			require.Equal(t, tt.wantStatus, StatusCode(err))
			ae, ok := apierr.As(err)
			require.True(t, ok)
			require.Equal(t, tt.wantCode, ae.Code)
			require.Len(t, Diagnostics(err), tt.wantDiags)
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	_, err := New(addr, "").Get(t.Context(), "agents", "default", "x")
	require.ErrorIs(t, err, ErrUnreachable)
}

func TestBadServerAddress(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "ftp://x", "http://"} {
		_, err := New(s, "").Get(t.Context(), "agents", "default", "x")
		require.Error(t, err, s)
	}
}

func TestListAllFollowsContinue(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request) {
		next := map[string]string{"": "p2", "p2": "p3", "p3": ""}[r.URL.Query().Get("continue")]
		fmt.Fprintf(w, `{"apiVersion":"warden.dev/v1alpha1","kind":"AgentList","metadata":{"resourceVersion":"7","continue":%q},"items":[{"kind":"Agent","metadata":{"name":"a-%s"}}]}`,
			next, r.URL.Query().Get("continue"))
	})
	l, err := c.ListAll(t.Context(), "agents", "default", ListOptions{})
	require.NoError(t, err)
	require.Len(t, l.Items, 3)
	require.Equal(t, "7", l.Metadata.ResourceVersion)
	require.Empty(t, l.Metadata.Continue)
}

func TestWatch(t *testing.T) {
	t.Parallel()
	c := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("resourceVersion") == "1" {
			writeErr(w, 410, apierr.New(apierr.CodeGone, "too old"))
			return
		}
		if r.URL.Query().Get("watch") != "true" || r.URL.Query().Get("selector") != "kind=Agent" {
			http.Error(w, "bad query", 400)
			return
		}
		fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"Agent","metadata":{"name":"a"}}}`)
		fmt.Fprintln(w, `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}`)
		fmt.Fprintln(w, `not json`)
	})

	_, err := c.Watch(t.Context(), "kind=Agent", "1")
	require.Equal(t, 410, StatusCode(err))

	ch, err := c.Watch(t.Context(), "kind=Agent", "5")
	require.NoError(t, err)
	var types []string
	for ev := range ch {
		types = append(types, ev.Type)
		if ev.Type == api.EventError {
			require.Error(t, ev.Err)
		}
	}
	require.Equal(t, []string{api.EventAdded, api.EventBookmark, api.EventError}, types)
}
