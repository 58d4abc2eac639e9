package server_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/oidc/oidctest"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
)

// withProvider starts a real OpenID Provider (zitadel/oidc op with its
// example storage and login form) for this server's callback and
// configures it as the deployment's issuer.
func withProvider(t *testing.T, emails ...string) func(*server.Config) {
	return func(c *server.Config) {
		redirect := "http://" + c.ControlAddr + "/auth/callback"
		issuer := oidctest.Provider(t, redirect, emails...)
		c.OIDC = &oidc.Config{Issuers: []oidc.IssuerConfig{{Name: "test", IssuerURL: issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret}},
			RedirectURL: redirect}
	}
}

// browser is a cookie-keeping client that stops at Warden's redirects.
type browser struct {
	t      *testing.T
	b      *bundle
	client *http.Client
}

func newBrowser(t *testing.T, b *bundle) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	host := strings.TrimPrefix(b.url, "http://")
	return &browser{t: t, b: b, client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host == host {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

func (br *browser) do(req *http.Request) response {
	br.t.Helper()
	res, err := br.client.Do(req)
	require.NoError(br.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(br.t, err)
	return response{status: res.StatusCode, body: out, header: res.Header}
}

func (br *browser) get(path string) response {
	br.t.Helper()
	req, err := http.NewRequest(http.MethodGet, br.b.url+path, nil)
	require.NoError(br.t, err)
	return br.do(req)
}

func (br *browser) post(path string, form url.Values) response {
	br.t.Helper()
	req, err := http.NewRequest(http.MethodPost, br.b.url+path, strings.NewReader(form.Encode()))
	require.NoError(br.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return br.do(req)
}

// signIn runs /auth/login, the provider's login form and Warden's
// callback, and returns the callback's answer.
func (br *browser) signIn(email string) response {
	br.t.Helper()
	t := br.t
	// The client follows /auth/login to the provider's login form.
	page, err := br.client.Get(br.b.url + "/auth/login")
	require.NoError(t, err)
	_ = page.Body.Close()
	id := page.Request.URL.Query().Get("authRequestID")
	require.NotEmpty(t, id)
	issuer := page.Request.URL.Scheme + "://" + page.Request.URL.Host
	done, err := br.client.PostForm(issuer+"/login/username", url.Values{"id": {id}, "username": {email}, "password": {oidctest.Password}})
	require.NoError(t, err)
	_ = done.Body.Close()
	require.Equal(t, http.StatusFound, done.StatusCode)
	cb, err := url.Parse(done.Header.Get("Location"))
	require.NoError(t, err)
	return br.get(cb.RequestURI())
}

var (
	choiceTokenRE = regexp.MustCompile(`name="` + oidc.ChoiceField + `" value="([^"]+)"`)
	csrfRE        = regexp.MustCompile(`name="` + oidc.CSRFField + `" value="([^"]+)"`)
)

// auditOf lists "actor verb outcome" of tenant's records of verb.
func auditOf(t *testing.T, st store.Store, tenant, verb string) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.View(context.Background(), tenant, func(ctx context.Context, r store.Reader) error {
		recs, err := r.AuditList(ctx, store.AuditListParams{Verb: verb, Limit: 100})
		for _, rec := range recs {
			out = append(out, rec.Actor+" "+rec.Verb+" "+rec.Outcome)
		}
		return err
	}))
	return out
}

// TestConsoleTenantChoiceAndSwitch signs a person in several tenants in
// through a real provider: the callback answers the choose-a-tenant page,
// its form signs in, /tenants and the header offer the switch, and a
// switch to a tenant of someone else is refused with the console's 403
// page and written nowhere but the person's own tenant.
func TestConsoleTenantChoiceAndSwitch(t *testing.T) {
	t.Parallel()
	const carol, bob, nobody = "carol@acme.example", "bob@acme.example", "nobody@acme.example"
	b := consoleSetup(t, withProvider(t, carol, bob, nobody))
	ctx := context.Background()
	now := time.Now().UTC()
	svc := tenants.New(b.store, authz.New(b.store, time.Now), time.Now, slog.New(slog.DiscardHandler))
	_, err := svc.Signup(ctx, tenants.SignupRequest{TenantID: "beta", DisplayName: "Beta Corp", OwnerEmail: carol})
	require.NoError(t, err)
	require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		for _, m := range []string{carol, bob} {
			if err := tx.MemberUpsert(ctx, store.Member{Tenant: server.LocalTenant, Email: m, Owner: true, Status: store.MemberActive, CreatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	}))

	br := newBrowser(t, b)
	choose := br.signIn(carol)
	require.Equal(t, http.StatusOK, choose.status, "%s", choose.body)
	require.Contains(t, choose.header.Get(headerContentType), "text/html")
	requireSecurityHeaders(t, choose)
	page := string(choose.body)
	for _, want := range []string{"<h1 id=\"choose-heading\">Choose a tenant</h1>", carol, `action="/auth/choose"`,
		`name="tenant" value="beta"`, `name="tenant" value="default"`, "Continue to Beta Corp"} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, `"tenants":`, "a page, not JSON")
	m := choiceTokenRE.FindStringSubmatch(page)
	require.NotNil(t, m)

	refused := br.post("/auth/choose", url.Values{"tenant": {"beta"}, oidc.ChoiceField: {"forged"}})
	require.Equal(t, http.StatusForbidden, refused.status)
	require.Contains(t, string(refused.body), "<html")

	chosen := br.post("/auth/choose", url.Values{"tenant": {"beta"}, oidc.ChoiceField: {html.UnescapeString(m[1])}})
	require.Equal(t, http.StatusSeeOther, chosen.status, "%s", chosen.body)
	require.Contains(t, auditOf(t, b.store, "beta", "signin"), "user:"+carol+" signin "+audit.OutcomeAllowed)

	list := br.get("/tenants")
	require.Equal(t, http.StatusOK, list.status, "%s", list.body)
	page = string(list.body)
	require.Contains(t, page, `<span class="badge ok">Current</span>`)
	require.Contains(t, page, `id="tenant-switch"`, "the header's switcher for a person in two tenants")
	require.Contains(t, page, `name="tenant" value="default"`)
	csrf := csrfRE.FindStringSubmatch(page)
	require.NotNil(t, csrf)

	switched := br.post("/auth/switch", url.Values{"tenant": {server.LocalTenant}, oidc.CSRFField: {html.UnescapeString(csrf[1])}})
	require.Equal(t, http.StatusSeeOther, switched.status, "%s", switched.body)
	require.Equal(t, "/", switched.header.Get("Location"))
	require.Contains(t, auditOf(t, b.store, server.LocalTenant, "switch"), "user:"+carol+" switch "+audit.OutcomeAllowed,
		"audited in the chosen tenant")
	list = br.get("/tenants")
	require.Equal(t, http.StatusOK, list.status)
	require.Regexp(t, `<code>default</code></td><td><span class="badge ok">Current`, string(list.body))

	// bob belongs to default only: switching to beta is refused.
	bobCookie, bobCSRF := signIn(t, b, bob, false)
	refused = b.page(t, http.MethodPost, "/auth/switch", bobCookie, url.Values{"tenant": {"beta"}, oidc.CSRFField: {bobCSRF}}, nil)
	require.Equal(t, http.StatusForbidden, refused.status)
	require.Contains(t, string(refused.body), "<html")
	require.Contains(t, string(refused.body), "is not a member of tenant &#34;beta&#34;")
	for _, verb := range []string{"switch", "signin", "post"} {
		for _, rec := range auditOf(t, b.store, "beta", verb) {
			require.NotContains(t, rec, bob, "nothing is written in the tenant asked for")
		}
	}
	require.Contains(t, auditOf(t, b.store, server.LocalTenant, "switch"), "user:"+bob+" switch "+audit.OutcomeDenied)
	only := b.page(t, http.MethodGet, "/tenants", bobCookie, nil, nil)
	require.Equal(t, http.StatusOK, only.status)
	require.NotContains(t, string(only.body), `id="tenant-switch"`, "no switcher with one tenant")

	// A person with no membership gets the console's 403 page.
	none := newBrowser(t, b).signIn(nobody)
	require.Equal(t, http.StatusForbidden, none.status)
	require.Contains(t, none.header.Get(headerContentType), "text/html")
	require.Contains(t, string(none.body), "is not a member of any tenant")
	require.NotContains(t, string(none.body), `"error"`)
}

const headerContentType = "Content-Type"
