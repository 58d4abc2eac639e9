package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/server"
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
	f := url.Values{"organization": {"Org " + tenant}, "tenant": {tenant}, "name": {"Ada"}, "email": {"ada@" + tenant + ".example"}}
	if token != "" {
		f.Set(oidc.CSRFField, token)
	}
	return f
}

func withSignupLimit(n int) func(*server.Config) {
	return func(c *server.Config) {
		withOIDC(true)(c)
		c.SignupLimit = oidc.RateLimit{Attempts: n, Window: time.Hour}
	}
}

// TestSignupIsGuarded posts sign-ups as a forger would: from another site,
// without the token, with the token in the URL, and too often.
func TestSignupIsGuarded(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, withSignupLimit(100))
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
	}
}

// TestSignupIsRateLimited signs up from one client until its limit: the
// next sign-up gets the page with 429 and Retry-After.
func TestSignupIsRateLimited(t *testing.T) {
	t.Parallel()
	const limit = 3
	b := consoleSetup(t, withSignupLimit(limit))
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
