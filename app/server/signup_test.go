package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/web"
)

var hiddenCSRF = regexp.MustCompile(`name="` + oidc.CSRFField + `" value="([^"]+)"`)

// signupToken opens the sign-up page as a new visitor and returns its form
// cookie and the token of its hidden field.
func signupToken(t *testing.T, b *bundle) (cookie, token string) {
	t.Helper()
	r := b.page(t, http.MethodGet, "/signup", "", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == web.FormCookie {
			cookie = c.Value
			require.True(t, c.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, c.SameSite)
		}
	}
	m := hiddenCSRF.FindSubmatch(r.body)
	require.NotNil(t, m, "the form carries a CSRF field: %s", r.body)
	require.NotEmpty(t, cookie)
	require.Equal(t, cookie, string(m[1]))
	return cookie, string(m[1])
}

func signupForm(tenant, token string) url.Values {
	f := url.Values{"organization": {"Org " + tenant}, "tenant": {tenant}, "name": {"Ada"}}
	if token != "" {
		f.Set(oidc.CSRFField, token)
	}
	return f
}

// withSignupLimit turns sign-up on, through an issuer that serves only
// its discovery document (discoveryOnly), with n sign-ups per client IP
// an hour.
func withSignupLimit(issuer string, n int) func(*server.Config) {
	return func(c *server.Config) {
		withOIDC(true)(c)
		c.OIDC.Issuers[0].IssuerURL = issuer
		c.SignupLimit = oidc.RateLimit{Attempts: n, Window: time.Hour}
	}
}

// discoveryOnly serves an OpenID Provider's discovery document and nothing
// else: enough for the sign-up form to send people to its authorization
// endpoint, which is as far as these tests follow them (app/oidc and e2e
// run the whole flow with a real provider).
func discoveryOnly(t *testing.T) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize",
			"token_endpoint": srv.URL + "/token", "jwks_uri": srv.URL + "/keys", "userinfo_endpoint": srv.URL + "/userinfo",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// requireSentToIdP checks that r hands the person to the issuer's
// authorization endpoint, with the flow cookie, and that nothing was
// created yet.
func requireSentToIdP(t *testing.T, b *bundle, r response, issuer, tenant string) {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	require.True(t, strings.HasPrefix(r.header.Get("Location"), issuer+"/authorize?"), r.header.Get("Location"))
	found := false
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		found = found || c.Name == oidc.FlowCookie && c.HttpOnly
	}
	require.True(t, found, "the flow cookie is set")
	_, err := b.store.TenantGet(context.Background(), tenant)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing is created before the provider proves the e-mail")
}

// TestSignupIsGuarded posts sign-ups as a forger would: from another site,
// without the token, with the token in the URL, and too often.
func TestSignupIsGuarded(t *testing.T) {
	t.Parallel()
	idp := discoveryOnly(t)
	b := consoleSetup(t, withSignupLimit(idp, 100))
	cookie, token := signupToken(t, b)
	formCookie := map[string]string{"Cookie": web.FormCookie + "=" + cookie}
	withOrigin := func(origin string) map[string]string {
		return map[string]string{"Cookie": web.FormCookie + "=" + cookie, "Origin": origin}
	}
	host := b.url[len("http://"):]
	cases := []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
		status int
	}{
		{"posted from another site", "/signup", signupForm("evil", token), withOrigin("https://evil.example"), http.StatusForbidden},
		{"referred by another site", "/signup", signupForm("evil2", token), map[string]string{"Cookie": web.FormCookie + "=" + cookie, "Referer": "https://evil.example/x"}, http.StatusForbidden},
		{"without the token", "/signup", signupForm("nocsrf", ""), formCookie, http.StatusForbidden},
		{"without the cookie", "/signup", signupForm("nocookie", token), nil, http.StatusForbidden},
		{"with another token", "/signup", signupForm("wrong", "A"+token[1:]), formCookie, http.StatusForbidden},
		{"with the token in the URL only", "/signup?" + oidc.CSRFField + "=" + token, signupForm("inurl", ""), formCookie, http.StatusForbidden},
		{"from its own page", "/signup", signupForm("acme", token), withOrigin("http://" + host), http.StatusSeeOther},
		{"by a client that names no origin", "/signup", signupForm("globex", token), formCookie, http.StatusSeeOther},
	}
	for _, tc := range cases {
		r := b.page(t, http.MethodPost, tc.path, "", tc.form, tc.header)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
		if tc.status == http.StatusSeeOther {
			requireSentToIdP(t, b, r, idp, tc.form.Get("tenant"))
		}
	}
}

// TestSignupIsRateLimited signs up from one client until its limit: the
// next sign-up gets the page with 429 and Retry-After.
func TestSignupIsRateLimited(t *testing.T) {
	t.Parallel()
	const limit = 3
	b := consoleSetup(t, withSignupLimit(discoveryOnly(t), limit))
	cookie, token := signupToken(t, b)
	header := map[string]string{"Cookie": web.FormCookie + "=" + cookie}
	for i := range limit {
		r := b.page(t, http.MethodPost, "/signup", "", signupForm("tenant-"+string(rune('a'+i)), token), header)
		require.Equal(t, http.StatusSeeOther, r.status, "sign-up %d: %s", i+1, r.body)
	}
	r := b.page(t, http.MethodPost, "/signup", "", signupForm("one-too-many", token), header)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "Too many sign-ups")
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

// TestConsoleRefusesCSRFTokenInURL posts a console form whose CSRF token
// is in the query string only.
func TestConsoleRefusesCSRFTokenInURL(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withOIDC(false))
	owner, csrf := signIn(t, b, "alice@acme.example", true)
	form := url.Values{"email": {"bob@acme.example"}, "role": {"editor"}, "namespace": {"default"}}
	r := b.page(t, http.MethodPost, "/members/invite?"+oidc.CSRFField+"="+csrf, owner, form, nil)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	form.Set(oidc.CSRFField, csrf)
	r = b.page(t, http.MethodPost, "/members/invite", owner, form, nil)
	require.Less(t, r.status, 400, "%s", r.body)
}
