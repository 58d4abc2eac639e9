package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/web"
)

// consoleSetup starts a bootstrapped server on SQLite whose config mutate
// may change (OIDC, Signup).
func consoleSetup(t *testing.T, mutate func(*server.Config)) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := backend.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"), backend.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, _, err := server.Bootstrap(ctx, st, nil)
	require.NoError(t, err)
	ln := listen(t)
	cfg := server.Config{Store: st, ControlAddr: ln.Addr().String()}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return &bundle{url: "http://" + ln.Addr().String(), key: key, store: st, srv: srv}
}

// withOIDC configures one issuer that is never contacted: these tests make
// sessions directly in the store.
func withOIDC(signup bool) func(*server.Config) {
	return func(c *server.Config) {
		c.OIDC = &oidc.Config{
			Issuers:     []oidc.IssuerConfig{{Name: "Acme SSO", IssuerURL: "https://idp.invalid", ClientID: "warden"}},
			RedirectURL: "http://" + c.ControlAddr + "/auth/callback",
		}
		c.Signup = signup
	}
}

// signIn makes email a member of tenant default (owner or not) and
// returns a session cookie value and its CSRF token.
func signIn(t *testing.T, b *bundle, email string, owner bool) (cookie, csrf string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberUpsert(ctx, store.Member{Tenant: server.LocalTenant, Email: email, Owner: owner, Status: store.MemberActive, CreatedAt: now})
	}))
	cookie, csrf = "sess-"+email, "csrf-"+email
	sum := sha256.Sum256([]byte(cookie))
	require.NoError(t, b.store.SessionInsert(ctx, store.Session{IDHash: hex.EncodeToString(sum[:]), Tenant: server.LocalTenant, Email: email,
		CSRFToken: csrf, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	return cookie, csrf
}

// page requests path without following redirects; cookie (optional) is
// the session, form (optional) a POST body, header extra headers.
func (b *bundle) page(t *testing.T, method, path, cookie string, form url.Values, header map[string]string) response {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, b.url+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: oidc.SessionCookie, Value: cookie})
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, body: out, header: res.Header}
}

func requireSecurityHeaders(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, web.ContentSecurityPolicy, r.header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", r.header.Get("X-Frame-Options"))
	require.Equal(t, "same-origin", r.header.Get("Referrer-Policy"))
}

func TestConsoleLocalMode(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, nil)
	tests := []struct {
		name, method, path string
		status             int
		location           string
		contains, absent   []string
	}{
		{name: "sign-in explains API keys and the CLI", method: http.MethodGet, path: "/signin", status: http.StatusOK,
			contains: []string{"local mode", "warden get agents", "config.yaml", "--oidc-issuer"},
			absent:   []string{"Continue with", "/auth/login", "Create a tenant", "organisation’s SSO"}},
		{name: "root sends to sign-in", method: http.MethodGet, path: "/", status: http.StatusSeeOther, location: "/signin"},
		{name: "screens need a session", method: http.MethodGet, path: "/members", status: http.StatusSeeOther, location: "/signin"},
		{name: "sign-up is disabled", method: http.MethodGet, path: "/signup", status: http.StatusNotFound, contains: []string{"disabled"}},
		{name: "sign-up post is disabled", method: http.MethodPost, path: "/signup", status: http.StatusNotFound},
		{name: "no OIDC login", method: http.MethodGet, path: "/auth/login", status: http.StatusNotFound},
		{name: "stylesheet", method: http.MethodGet, path: "/static/style.css", status: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := b.page(t, tc.method, tc.path, "", nil, nil)
			require.Equal(t, tc.status, r.status, string(r.body))
			if tc.location != "" {
				require.Equal(t, tc.location, r.header.Get("Location"))
			}
			for _, s := range tc.contains {
				require.Contains(t, string(r.body), s)
			}
			for _, s := range tc.absent {
				require.NotContains(t, string(r.body), s)
			}
			if tc.path != "/auth/login" {
				requireSecurityHeaders(t, r)
			}
		})
	}
	// The API is unchanged: bearer keys only.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)
	require.Equal(t, http.StatusUnauthorized, b.page(t, http.MethodGet, "/v1/namespaces/default/agents", "whatever", nil, nil).status)
}

func TestConsoleWithOIDC(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	cookie, csrf := signIn(t, b, "alice@acme.example", true)

	r := b.page(t, http.MethodGet, "/signin", "", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	requireSecurityHeaders(t, r)
	require.Contains(t, string(r.body), "Continue with Acme SSO")
	require.NotContains(t, string(r.body), "local mode")
	require.NotContains(t, string(r.body), "/signup", "sign-up is off unless Config.Signup")
	require.Equal(t, http.StatusNotFound, b.page(t, http.MethodGet, "/signup", "", nil, nil).status)

	r = b.page(t, http.MethodGet, "/members", cookie, nil, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSecurityHeaders(t, r)
	require.Contains(t, string(r.body), "alice@acme.example")
	require.Contains(t, string(r.body), csrf, "forms carry the session's CSRF token")

	// A console write without the CSRF token is refused and audited.
	r = b.page(t, http.MethodPost, "/namespaces", cookie, url.Values{"name": {"payments"}}, nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.body))
	r = b.page(t, http.MethodPost, "/namespaces", cookie, url.Values{"name": {"payments"}, "csrf_token": {"wrong"}}, nil)
	require.Equal(t, http.StatusForbidden, r.status, string(r.body))
	r = b.page(t, http.MethodPost, "/namespaces", cookie, url.Values{"name": {"payments"}, oidc.CSRFField: {csrf}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, string(r.body))
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/namespaces/payments", "", nil).status)

	// An API key made in the console works on the API.
	r = b.page(t, http.MethodPost, "/apikeys", cookie, url.Values{"name": {"ci"}, "namespace": {"payments"}, "role": {"editor"}},
		map[string]string{oidc.CSRFHeader: csrf})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	secret := regexp.MustCompile(`wk_[A-Za-z0-9_-]+`).FindString(string(r.body))
	require.NotEmpty(t, secret, string(r.body))
	require.Equal(t, http.StatusOK, b.doAs(t, secret, http.MethodGet, "/v1/namespaces/payments/agents", "", nil).status)
	require.Equal(t, http.StatusForbidden, b.doAs(t, secret, http.MethodGet, "/v1/namespaces/default/agents", "", nil).status)

	// /v1 accepts the session cookie, with CSRF on writes only.
	require.Equal(t, http.StatusOK, b.page(t, http.MethodGet, "/v1/namespaces/default/agents", cookie, nil, nil).status)
	ns := []byte("apiVersion: warden.dev/v1alpha1\nkind: Namespace\nmetadata:\n  name: team-b\n")
	apply := func(header map[string]string) int {
		req, err := http.NewRequest(http.MethodPost, b.url+"/v1/resources/validate", strings.NewReader(string(ns)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/yaml")
		req.AddCookie(&http.Cookie{Name: oidc.SessionCookie, Value: cookie})
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusForbidden, apply(nil))
	require.Equal(t, http.StatusOK, apply(map[string]string{oidc.CSRFHeader: csrf}))

	// Every console write left an audit record, refusals included.
	r = b.do(t, http.MethodGet, "/v1/audit?actor=user:alice@acme.example&limit=1000", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var got []string
	for _, it := range r.json(t)["items"].([]any) {
		rec := it.(map[string]any)
		got = append(got, rec["verb"].(string)+" "+rec["resource"].(string)+" "+rec["outcome"].(string))
	}
	require.Contains(t, got, "post console/namespaces denied")
	require.Contains(t, got, "apply namespaces/payments allowed")
	require.Contains(t, got, "create apikeys/ci allowed")
}

func TestConsoleAuthorizesEveryAction(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	owner, ownerCSRF := signIn(t, b, "alice@acme.example", true)
	// Bob is an editor in namespace default, through the console's invite.
	r := b.page(t, http.MethodPost, "/members/invite", owner, url.Values{"email": {"bob@acme.example"}, "role": {"editor"},
		"namespace": {"default"}, oidc.CSRFField: {ownerCSRF}}, nil)
	require.Less(t, r.status, 400, string(r.body))
	bob, bobCSRF := signIn(t, b, "bob@acme.example", false)
	post := func(path string, form url.Values) string {
		t.Helper()
		form.Set(oidc.CSRFField, bobCSRF)
		r := b.page(t, http.MethodPost, path, bob, form, nil)
		return string(r.body)
	}
	tests := []struct {
		name, path string
		form       url.Values
		contains   string
	}{
		{"create namespace", "/namespaces", url.Values{"name": {"x"}}, "may not apply namespaces"},
		{"key above own role", "/apikeys", url.Values{"name": {"k1"}, "namespace": {"default"}, "role": {"admin"}}, "may not create apikeys"},
		{"tenant-wide key", "/apikeys", url.Values{"name": {"k2"}, "namespace": {"*"}, "role": {"viewer"}}, "may not create apikeys"},
		{"invite", "/members/invite", url.Values{"email": {"eve@acme.example"}, "role": {"viewer"}, "namespace": {"default"}}, "may not create members"},
		{"remove", "/members/alice@acme.example/remove", url.Values{}, "may not delete members"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, post(tc.path, tc.form), tc.contains)
		})
	}
	for _, path := range []string{"/members", "/audit"} {
		require.Contains(t, string(b.page(t, http.MethodGet, path, bob, nil, nil).body), "may not list")
	}
	r = b.do(t, http.MethodGet, "/v1/audit?actor=user:bob@acme.example&limit=1000", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	denied := 0
	for _, it := range r.json(t)["items"].([]any) {
		if it.(map[string]any)["outcome"] == "denied" {
			denied++
		}
	}
	require.Equal(t, len(tests), denied, "each refused console write is audited as denied: %s", r.body)
}

// TestConsoleSignup: the sign-up form checks the tenant id and sends the
// person to the identity provider; it creates nothing itself, and sign-up
// without an issuer is refused at start-up.
func TestConsoleSignup(t *testing.T) {
	t.Parallel()
	idp := discoveryOnly(t)
	b := consoleSetup(t, withSignupLimit(idp, 100))
	r := b.page(t, http.MethodGet, "/signin", "", nil, nil)
	require.Contains(t, string(r.body), `href="/signup"`)
	// Browsers apply form-action to the redirect the post answers with.
	r = b.page(t, http.MethodGet, "/signup", "", nil, nil)
	require.Equal(t, web.ContentSecurityPolicy+" "+idp, r.header.Get("Content-Security-Policy"))
	cookie, token := signupToken(t, b)
	form := url.Values{"organization": {"Acme"}, "tenant": {"acme"}, "name": {"Ada"}, "email": {"mallory@evil.example"}, oidc.CSRFField: {token}}
	formCookie := map[string]string{"Cookie": web.FormCookie + "=" + cookie}
	r = b.page(t, http.MethodPost, "/signup", "", form, formCookie)
	requireSentToIdP(t, b, r, idp, "acme")
	require.NotContains(t, r.header.Get("Location"), "mallory", "a typed e-mail goes nowhere")

	require.NoError(t, b.store.TenantCreate(context.Background(), store.TenantRecord{ID: "taken", CreatedAt: time.Now()}))
	form.Set("tenant", "taken")
	r = b.page(t, http.MethodPost, "/signup", "", form, formCookie)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, string(r.body), "is taken")

	_, err := server.New(server.Config{Store: b.store, Signup: true})
	require.ErrorContains(t, err, "sign-up needs an OIDC issuer")
}

// TestConsoleAuditNewestFirst: the audit page, read from the store, lists
// the newest record first.
func TestConsoleAuditNewestFirst(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	owner, ownerCSRF := signIn(t, b, "alice@acme.example", true)
	for _, ns := range []string{"first-ns", "second-ns", "third-ns"} {
		r := b.page(t, http.MethodPost, "/namespaces", owner, url.Values{"name": {ns}, oidc.CSRFField: {ownerCSRF}}, nil)
		require.Less(t, r.status, 400, string(r.body))
	}
	body := string(b.page(t, http.MethodGet, "/audit?verb=apply", owner, nil, nil).body)
	first, second, third := strings.Index(body, "namespaces/first-ns"), strings.Index(body, "namespaces/second-ns"), strings.Index(body, "namespaces/third-ns")
	require.True(t, first > 0 && second > 0 && third > 0, body)
	require.Less(t, third, second, "newest first")
	require.Less(t, second, first, "newest first")
}

// TestConsoleAPIKeyExpiryAndAgent: the console's create form passes the
// expiry and the agent binding through to the API's key creation.
func TestConsoleAPIKeyExpiryAndAgent(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	owner, ownerCSRF := signIn(t, b, "alice@acme.example", true)
	r := b.page(t, http.MethodPost, "/apikeys", owner, url.Values{"name": {"ci"}, "namespace": {"default"}, "role": {"viewer"},
		"expires": {"720h"}, oidc.CSRFField: {ownerCSRF}}, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `id="new-secret"`)
	list := b.do(t, http.MethodGet, "/v1/apikeys", "", nil)
	require.Equal(t, http.StatusOK, list.status, string(list.body))
	found := false
	for _, it := range list.json(t)["items"].([]any) {
		k := it.(map[string]any)
		if k["name"] == "ci" {
			found = true
			require.NotEmpty(t, k["expiresAt"], "the key expires: %v", k)
		}
	}
	require.True(t, found, string(list.body))

	// The agent reaches the API, which refuses a binding to an unknown agent.
	r = b.page(t, http.MethodPost, "/apikeys", owner, url.Values{"name": {"bot"}, "namespace": {"default"}, "role": {"viewer"},
		"agent": {"ghost"}, oidc.CSRFField: {ownerCSRF}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Contains(t, string(r.body), `agent &#34;ghost&#34; not found`)
	require.NotContains(t, string(r.body), `id="new-secret"`)
}

// TestConsoleMemberRoleChange: an owner changes a member's role and grants
// ownership; an admin may not grant ownership.
func TestConsoleMemberRoleChange(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	owner, ownerCSRF := signIn(t, b, "alice@acme.example", true)
	for _, email := range []string{"bob@acme.example", "carol@acme.example"} {
		r := b.page(t, http.MethodPost, "/members/invite", owner, url.Values{"email": {email}, "role": {"viewer"},
			"namespace": {"default"}, oidc.CSRFField: {ownerCSRF}}, nil)
		require.Less(t, r.status, 400, string(r.body))
	}
	r := b.page(t, http.MethodPost, "/members/bob@acme.example/role", owner, url.Values{"role": {"admin"},
		"namespace": {"default"}, oidc.CSRFField: {ownerCSRF}}, map[string]string{"HX-Request": "true"})
	require.Contains(t, string(r.body), "bob@acme.example is now admin in default.")
	require.Contains(t, string(r.body), "admin in default")
	require.NotContains(t, string(r.body), "viewer in default, ", "the role is replaced, not added")

	bob, bobCSRF := signIn(t, b, "bob@acme.example", false)
	r = b.page(t, http.MethodPost, "/members/carol@acme.example/role", bob, url.Values{"role": {"owner"},
		oidc.CSRFField: {bobCSRF}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Contains(t, string(r.body), "Choose one of the offered roles.")

	r = b.page(t, http.MethodPost, "/members/carol@acme.example/role", owner, url.Values{"role": {"owner"},
		oidc.CSRFField: {ownerCSRF}}, map[string]string{"HX-Request": "true"})
	require.Contains(t, string(r.body), "carol@acme.example is now an owner.", string(r.body))
	require.Regexp(t, `carol@acme.example</th><td>[^<]*</td><td><span class="badge">owner</span>`, string(r.body))
}
