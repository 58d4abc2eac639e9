package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"golang.org/x/oauth2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/oidc/oidctest"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/app/store/postgres/pgtest"
	"github.com/warden-dev/warden/tenants"
)

const redirectURL = "http://warden.test/auth/callback"

var (
	opOnce   sync.Once
	opIssuer string
)

// provider starts, once per test binary, a real OpenID Provider
// (zitadel/oidc op with its example storage and login form).
func startProvider(t *testing.T) string {
	t.Helper()
	opOnce.Do(func() {
		var handler http.Handler
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
		opIssuer = srv.URL
		var people []oidctest.User
		for _, email := range []string{"alice@acme.example", "bob@acme.example", "carol@acme.example", "eve@evil.example", "nobody@acme.example",
			"founder@startup.example", "unverified@startup.example"} {
			people = append(people, oidctest.User{Email: email, Unverified: email == "unverified@startup.example"})
		}
		// dan's family_name stands in for a group claim in the SSO test.
		people = append(people, oidctest.User{Email: "dan@globex.example", FamilyName: "Admins"})
		handler = oidctest.Handler(opIssuer, redirectURL, people...)
	})
	return opIssuer
}

type bundle struct {
	ctx    context.Context
	st     store.Store
	h      *Handler
	app    *fiber.App
	issuer string
	skew   *atomic.Int64 // added to the wall clock, in nanoseconds
}

// storeURLs open a fresh store per backend.
var storeURLs = map[string]func(t *testing.T) string{
	"sqlite":   func(t *testing.T) string { return "sqlite://" + t.TempDir() + "/w.db" },
	"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
}

// forEachStore runs fn on SQLite and Postgres.
func forEachStore(t *testing.T, fn func(t *testing.T, storeURL string)) {
	for name, open := range storeURLs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func setup(t *testing.T, mutate ...func(*Config)) bundle {
	t.Helper()
	return setupOn(t, storeURLs["sqlite"](t), mutate...)
}

func setupOn(t *testing.T, storeURL string, mutate ...func(*Config)) bundle {
	t.Helper()
	ctx := context.Background()
	issuer := startProvider(t)
	st, err := backend.Open(ctx, storeURL, backend.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	skew := &atomic.Int64{}
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	log := slog.New(slog.DiscardHandler)

	svc := tenants.New(st, authz.New(st, now), now, log)
	_, err = svc.Signup(ctx, tenants.SignupRequest{TenantID: "acme", DisplayName: "Acme", OwnerEmail: "alice@acme.example"})
	require.NoError(t, err)
	_, err = svc.Signup(ctx, tenants.SignupRequest{TenantID: "beta", OwnerEmail: "carol@acme.example"})
	require.NoError(t, err)
	owner := auth.Principal{Tenant: "acme", Subject: "user:alice@acme.example", Email: "alice@acme.example", Kind: auth.KindUser}
	for _, email := range []string{"bob@acme.example", "carol@acme.example", "eve@evil.example"} {
		_, err = svc.Invite(ctx, owner, email, auth.RoleEditor, "")
		require.NoError(t, err)
	}
	// Tenant acme admits only its own domain.
	require.NoError(t, st.Update(ctx, "acme", func(ctx context.Context, tx store.Tx) error {
		o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: "acme"})
		if err != nil {
			return err
		}
		o.Spec["sso"] = map[string]any{"allowedDomains": []any{"acme.example"}}
		_, err = tx.ResourceUpdate(ctx, o)
		return err
	}))

	cfg := Config{Issuers: []IssuerConfig{{Name: "test", IssuerURL: issuer, ClientID: "warden", ClientSecret: "secret"}},
		RedirectURL: redirectURL, RateLimit: RateLimit{Attempts: 100, Window: time.Minute}}
	for _, m := range mutate {
		m(&cfg)
	}
	h, err := New(cfg, st, now, log)
	require.NoError(t, err)
	h.WithSignup(svc.Signup)

	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		e, ok := apierr.As(err)
		if !ok {
			e = apierr.New(apierr.CodeInternal, "%v", err)
		}
		return c.Status(e.Status()).JSON(apierr.Body{Error: e})
	}})
	app.Get("/auth/login", h.Login)
	app.Get("/auth/callback", h.Callback)
	app.Post("/auth/logout", h.Logout)
	app.Post(ChoosePath, h.Choose)
	app.Post("/auth/switch", h.Switch)
	app.Post("/signup", func(c *fiber.Ctx) error {
		return h.StartSignup(c, "", SignupIntent{Tenant: c.FormValue("tenant"), DisplayName: c.FormValue("organization"), OwnerName: c.FormValue("name")})
	})
	console := app.Group("/console", h.SessionAuth, h.CSRF)
	console.Get("/whoami", func(c *fiber.Ctx) error {
		p, _ := auth.PrincipalFrom(c.UserContext())
		return c.JSON(fiber.Map{"principal": p, "csrf": CSRFToken(c)})
	})
	console.Post("/things", func(c *fiber.Ctx) error { return c.SendString("done") })
	authn := auth.NewAuthenticator(st, now, h.Verifier())
	app.Get("/v1/whoami", func(c *fiber.Ctx) error {
		ctx := c.UserContext()
		if t := c.Get("X-Warden-Tenant"); t != "" {
			ctx = WithRequestedTenant(ctx, t)
		}
		p, err := authn.Authenticate(ctx, c.Get(fiber.HeaderAuthorization))
		if e, ok := apierr.As(err); ok && e.Code == apierr.CodeForbidden {
			return e
		}
		if err != nil {
			return unauthenticated("%v", err)
		}
		return c.JSON(p)
	})
	return bundle{ctx: ctx, st: st, h: h, app: app, issuer: issuer, skew: skew}
}

func (b bundle) do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	return resp
}

func cookieOf(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// started is a sign-in that went through the provider's login form and
// came back with a code, before Warden's callback ran.
type started struct {
	flow     *http.Cookie
	callback *url.URL
}

// authorize runs /auth/login and the provider's login form for email.
func (b bundle) authorize(t *testing.T, query, email string) started {
	t.Helper()
	resp := b.do(t, httptest.NewRequest(http.MethodGet, "/auth/login?"+query, nil))
	require.Equal(t, http.StatusFound, resp.StatusCode, body(t, resp))
	return b.authorizeFrom(t, resp, email)
}

// authorizeFrom follows resp, the start of a flow (sign-in or sign-up),
// through the provider's login form for email.
func (b bundle) authorizeFrom(t *testing.T, resp *http.Response, email string) started {
	t.Helper()
	flowC := cookieOf(resp, FlowCookie)
	require.NotNil(t, flowC)
	require.True(t, flowC.HttpOnly)
	loc := resp.Header.Get("Location")
	require.Contains(t, loc, "code_challenge_method=S256")
	require.Contains(t, loc, "nonce=")

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host == "warden.test" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	done := oidctest.SignIn(t, client, b.issuer, loc, email)
	require.Equal(t, http.StatusFound, done.StatusCode)
	cb, err := url.Parse(done.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "warden.test", cb.Host)
	return started{flow: flowC, callback: cb}
}

// flowOf decodes a flow cookie and returns it with its signature.
func flowOf(t *testing.T, c *http.Cookie) (flow, string) {
	t.Helper()
	payload, sig, _ := strings.Cut(c.Value, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	require.NoError(t, err)
	var f flow
	require.NoError(t, json.Unmarshal(raw, &f))
	return f, sig
}

func (b bundle) callback(t *testing.T, s started) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, s.callback.RequestURI(), nil)
	req.AddCookie(s.flow)
	return b.do(t, req)
}

// signIn signs email in and returns the session cookie.
func (b bundle) signIn(t *testing.T, query, email string) *http.Cookie {
	t.Helper()
	resp := b.callback(t, b.authorize(t, query, email))
	require.Equal(t, http.StatusFound, resp.StatusCode, body(t, resp))
	c := cookieOf(resp, SessionCookie)
	require.NotNil(t, c)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, c.SameSite)
	require.Equal(t, "/", c.Path)
	return c
}

func (b bundle) whoami(t *testing.T, session *http.Cookie) (int, auth.Principal, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/console/whoami", nil)
	req.AddCookie(session)
	resp := b.do(t, req)
	var out struct {
		Principal auth.Principal
		CSRF      string
	}
	raw := body(t, resp)
	_ = json.Unmarshal([]byte(raw), &out)
	return resp.StatusCode, out.Principal, out.CSRF
}

func errCode(t *testing.T, resp *http.Response) (string, string) {
	t.Helper()
	var b apierr.Body
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	require.NotNil(t, b.Error)
	return b.Error.Code, b.Error.Message
}

func TestCodeFlowSession(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, storeURL string) {
		b := setupOn(t, storeURL)
		session := b.signIn(t, "issuer=test", "alice@acme.example")

		status, p, csrf := b.whoami(t, session)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, auth.Principal{Tenant: "acme", Subject: "user:alice@acme.example", Role: auth.RoleOwner,
			Namespace: auth.AllNamespaces, Kind: auth.KindUser, Email: "alice@acme.example"}, p)
		require.NotEmpty(t, csrf)

		// Only the hash of the session id is stored.
		_, err := b.st.SessionGet(b.ctx, session.Value, time.Now())
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.st.SessionGet(b.ctx, hashSessionID(session.Value), time.Now())
		require.NoError(t, err)

		// The member is active and has a last login.
		ms, err := b.st.MembershipsByEmail(b.ctx, "alice@acme.example")
		require.NoError(t, err)
		require.Equal(t, store.MemberActive, ms[0].Status)
		require.NotNil(t, ms[0].LastLogin)

		// A non-owner gets the viewer floor; the invitation becomes active.
		bob := b.signIn(t, "", "bob@acme.example")
		status, p, _ = b.whoami(t, bob)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, auth.RoleViewer, p.Role)
		ms, err = b.st.MembershipsByEmail(b.ctx, "bob@acme.example")
		require.NoError(t, err)
		require.Equal(t, store.MemberActive, ms[0].Status)

		// No cookie, unknown cookie: 401.
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/console/whoami", nil))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		status, _, _ = b.whoami(t, &http.Cookie{Name: SessionCookie, Value: "forged"})
		require.Equal(t, http.StatusUnauthorized, status)

		// A removed member's session stops working at once.
		svc := tenants.New(b.st, nil, nil, nil)
		require.NoError(t, svc.RemoveMember(b.ctx, auth.SystemPrincipal("acme"), "bob@acme.example"))
		status, _, _ = b.whoami(t, bob)
		require.Equal(t, http.StatusUnauthorized, status)

		// The session expires.
		b.skew.Store(int64(13 * time.Hour))
		status, _, _ = b.whoami(t, session)
		require.Equal(t, http.StatusUnauthorized, status)
	})
}

func TestCSRFAndLogout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := b.signIn(t, "", "alice@acme.example")
	_, _, csrf := b.whoami(t, session)

	post := func(path, header, form string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if header != "" {
			req.Header.Set(CSRFHeader, header)
		}
		req.AddCookie(session)
		return b.do(t, req)
	}
	for _, tc := range []struct {
		name, header, form string
		status             int
	}{
		{"no token", "", "", http.StatusForbidden},
		{"wrong header", "nope", "", http.StatusForbidden},
		{"wrong field", "", "csrf_token=nope", http.StatusForbidden},
		{"htmx header", csrf, "", http.StatusOK},
		{"form field", "", "csrf_token=" + url.QueryEscape(csrf), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post("/console/things", tc.header, tc.form)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status == http.StatusForbidden {
				code, msg := errCode(t, resp)
				require.Equal(t, apierr.CodeForbidden, code)
				require.Contains(t, msg, "CSRF")
			}
		})
	}

	require.Equal(t, http.StatusForbidden, post("/auth/logout", "", "").StatusCode)
	resp := post("/auth/logout", csrf, "")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cleared := cookieOf(resp, SessionCookie)
	require.NotNil(t, cleared)
	require.Empty(t, cleared.Value)
	status, _, _ := b.whoami(t, session)
	require.Equal(t, http.StatusUnauthorized, status)
}

// signins lists tenant's sign-in records as "actor outcome code".
func (b bundle) signins(t *testing.T, tenant string) []string {
	t.Helper()
	var out []string
	require.NoError(t, b.st.View(b.ctx, tenant, func(ctx context.Context, r store.Reader) error {
		recs, err := r.AuditList(ctx, store.AuditListParams{Verb: "signin", Limit: 100})
		for _, rec := range recs {
			code, _, _ := strings.Cut(rec.Reason, ":")
			out = append(out, rec.Actor+" "+rec.Outcome+" "+code)
		}
		return err
	}))
	return out
}

func TestCallbackRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("wrong state", func(t *testing.T) {
		s := b.authorize(t, "", "alice@acme.example")
		q := s.callback.Query()
		q.Set("state", "forged")
		s.callback.RawQuery = q.Encode()
		resp := b.callback(t, s)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "state")
	})
	t.Run("no flow cookie", func(t *testing.T) {
		s := b.authorize(t, "", "alice@acme.example")
		resp := b.do(t, httptest.NewRequest(http.MethodGet, s.callback.RequestURI(), nil))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
	t.Run("wrong nonce", func(t *testing.T) {
		s := b.authorize(t, "", "alice@acme.example")
		f, _ := flowOf(t, s.flow)
		f.Nonce = "another-sign-in"
		nb, _ := json.Marshal(f)
		np := base64.RawURLEncoding.EncodeToString(nb)
		s.flow = &http.Cookie{Name: FlowCookie, Value: np + "." + b.h.sign(np)}
		resp := b.callback(t, s)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "nonce")
	})
	t.Run("tampered flow cookie", func(t *testing.T) {
		s := b.authorize(t, "", "alice@acme.example")
		s.flow.Value = strings.Replace(s.flow.Value, ".", "x.", 1)
		require.Equal(t, http.StatusBadRequest, b.callback(t, s).StatusCode)
	})
	t.Run("code used twice", func(t *testing.T) {
		s := b.authorize(t, "", "alice@acme.example")
		require.Equal(t, http.StatusFound, b.callback(t, s).StatusCode)
		require.Equal(t, http.StatusUnauthorized, b.callback(t, s).StatusCode)
	})
	t.Run("domain not allowed", func(t *testing.T) {
		resp := b.callback(t, b.authorize(t, "", "eve@evil.example"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "allows only e-mail addresses of acme.example")
		require.Nil(t, cookieOf(resp, SessionCookie))
		require.Contains(t, b.signins(t, "acme"), "user:eve@evil.example denied Forbidden")
	})
	t.Run("no membership", func(t *testing.T) {
		resp := b.callback(t, b.authorize(t, "", "nobody@acme.example"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "nobody@acme.example is not a member of any tenant")
	})
	t.Run("not a member of the requested tenant", func(t *testing.T) {
		resp := b.callback(t, b.authorize(t, "tenant=beta", "bob@acme.example"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Contains(t, b.signins(t, "beta"), "user:bob@acme.example denied Forbidden", "audited in the tenant asked for")
		require.NotContains(t, b.signins(t, "acme"), "user:bob@acme.example denied Forbidden")
	})
	t.Run("a tenant that does not exist", func(t *testing.T) {
		resp := b.callback(t, b.authorize(t, "tenant=nowhere", "bob@acme.example"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Empty(t, b.signins(t, "nowhere"), "nothing is written for a tenant that does not exist")
	})
	t.Run("unknown issuer", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/auth/login?issuer=nope", nil))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
}

func TestTenantChoice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.callback(t, b.authorize(t, "", "carol@acme.example"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, cookieOf(resp, SessionCookie), "no session before a tenant is chosen")
	choiceC := cookieOf(resp, ChoiceCookie)
	require.NotNil(t, choiceC)
	require.True(t, choiceC.HttpOnly)
	require.Equal(t, "/auth", choiceC.Path)
	var choice TenantChoice
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&choice))
	require.Len(t, choice.Tenants, 2)
	require.Equal(t, "acme", choice.Tenants[0].ID)
	require.Equal(t, "Acme", choice.Tenants[0].DisplayName)
	require.Equal(t, "/auth/login?issuer=test&tenant=beta", choice.Tenants[1].LoginURL)
	require.Equal(t, ChoosePath, choice.ChoosePath)
	require.Equal(t, ChoiceField, choice.TokenField)
	require.NotEmpty(t, choice.Token)

	choose := func(form url.Values, cookie *http.Cookie) *http.Response {
		req := httptest.NewRequest(http.MethodPost, ChoosePath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != nil {
			req.AddCookie(cookie)
		}
		return b.do(t, req)
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		cookie *http.Cookie
		status int
	}{
		{name: "no choice cookie", form: url.Values{"tenant": {"beta"}, ChoiceField: {choice.Token}}, status: http.StatusBadRequest},
		{name: "wrong token", form: url.Values{"tenant": {"beta"}, ChoiceField: {"forged"}}, cookie: choiceC, status: http.StatusForbidden},
		{name: "no token", form: url.Values{"tenant": {"beta"}}, cookie: choiceC, status: http.StatusForbidden},
		{name: "forged cookie", form: url.Values{"tenant": {"beta"}, ChoiceField: {choice.Token}},
			cookie: &http.Cookie{Name: ChoiceCookie, Value: strings.Replace(choiceC.Value, ".", "x.", 1)}, status: http.StatusBadRequest},
		{name: "a tenant of someone else", form: url.Values{"tenant": {"nowhere"}, ChoiceField: {choice.Token}}, cookie: choiceC, status: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := choose(tc.form, tc.cookie)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Nil(t, cookieOf(resp, SessionCookie))
		})
	}

	resp = choose(url.Values{"tenant": {"beta"}, ChoiceField: {choice.Token}}, choiceC)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body(t, resp))
	session := cookieOf(resp, SessionCookie)
	require.NotNil(t, session)
	require.Equal(t, "", cookieOf(resp, ChoiceCookie).Value, "the choice is used once")
	_, p, _ := b.whoami(t, session)
	require.Equal(t, "beta", p.Tenant)
	require.Equal(t, auth.RoleOwner, p.Role)
	require.Contains(t, b.signins(t, "beta"), "user:carol@acme.example allowed signed in with http", "audited in the chosen tenant")

	session = b.signIn(t, "tenant=beta", "carol@acme.example")
	_, p, _ = b.whoami(t, session)
	require.Equal(t, "beta", p.Tenant)
}

// switches lists the switch records of tenant.
func (b bundle) switches(t *testing.T, tenant string) []string {
	t.Helper()
	var out []string
	require.NoError(t, b.st.View(b.ctx, tenant, func(ctx context.Context, r store.Reader) error {
		recs, err := r.AuditList(ctx, store.AuditListParams{Verb: "switch", Limit: 100})
		for _, rec := range recs {
			out = append(out, rec.Actor+" "+rec.Outcome+" "+rec.Reason)
		}
		return err
	}))
	return out
}

func TestSwitchTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(session *http.Cookie, form url.Values) *http.Response {
		req := httptest.NewRequest(http.MethodPost, "/auth/switch", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if session != nil {
			req.AddCookie(session)
		}
		return b.do(t, req)
	}
	carol := b.signIn(t, "tenant=acme", "carol@acme.example")
	_, _, csrf := b.whoami(t, carol)
	bob := b.signIn(t, "", "bob@acme.example")
	_, _, bobCSRF := b.whoami(t, bob)

	for _, tc := range []struct {
		name    string
		session *http.Cookie
		form    url.Values
		status  int
	}{
		{name: "no session", form: url.Values{"tenant": {"beta"}}, status: http.StatusUnauthorized},
		{name: "no CSRF token", session: carol, form: url.Values{"tenant": {"beta"}}, status: http.StatusForbidden},
		{name: "bad tenant name", session: carol, form: url.Values{"tenant": {"Not A Name"}, CSRFField: {csrf}}, status: http.StatusBadRequest},
		{name: "a tenant the person is not a member of", session: bob, form: url.Values{"tenant": {"beta"}, CSRFField: {bobCSRF}}, status: http.StatusForbidden},
		{name: "a tenant that does not exist", session: bob, form: url.Values{"tenant": {"nowhere"}, CSRFField: {bobCSRF}}, status: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(tc.session, tc.form)
			require.Equal(t, tc.status, resp.StatusCode, body(t, resp))
			require.Nil(t, cookieOf(resp, SessionCookie))
		})
	}
	_, p, _ := b.whoami(t, bob)
	require.Equal(t, "acme", p.Tenant, "a refused switch changes nothing")
	require.Empty(t, b.switches(t, "beta"), "a refused switch writes nothing in the tenant it asked for")
	require.Empty(t, b.switches(t, "acme"))

	resp := post(carol, url.Values{"tenant": {"beta"}, CSRFField: {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	next := cookieOf(resp, SessionCookie)
	require.NotNil(t, next)
	require.NotEqual(t, carol.Value, next.Value, "a switch starts a new session")
	status, _, _ := b.whoami(t, carol)
	require.Equal(t, http.StatusUnauthorized, status, "the old session ends")
	_, p, _ = b.whoami(t, next)
	require.Equal(t, "beta", p.Tenant)
	require.Equal(t, []string{"user:carol@acme.example allowed switched from tenant acme"}, b.switches(t, "beta"))
	require.Empty(t, b.switches(t, "acme"))
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RateLimit = RateLimit{Attempts: 3, Window: 5 * time.Minute} })
	for range 3 {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
		require.Equal(t, http.StatusFound, resp.StatusCode)
	}
	resp := b.do(t, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	code, _ := errCode(t, resp)
	require.Equal(t, apierr.CodeRateLimited, code)
	// The callback shares the per-IP bucket.
	resp = b.do(t, httptest.NewRequest(http.MethodGet, "/auth/callback?state=x&code=y", nil))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	// Tokens come back with time.
	b.skew.Store(int64(2 * time.Minute))
	resp = b.do(t, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	require.Equal(t, http.StatusFound, resp.StatusCode)
}

func TestLimiterPerKey(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := NewLimiter(RateLimit{Attempts: 10, Window: 5 * time.Minute}, func() time.Time { return now })
	for range 10 {
		ok, _ := l.Allow("email:a@x.example")
		require.True(t, ok)
	}
	ok, retry := l.Allow("email:a@x.example")
	require.False(t, ok)
	require.Equal(t, 30*time.Second, retry)
	ok, _ = l.Allow("email:b@x.example")
	require.True(t, ok, "buckets are per key")
	now = now.Add(30 * time.Second)
	ok, _ = l.Allow("email:a@x.example")
	require.True(t, ok)
}

// idToken runs the code flow outside Warden's callback and returns the raw
// ID token the provider issued to client "warden".
func (b bundle) idToken(t *testing.T, email string) string {
	t.Helper()
	s := b.authorize(t, "", email)
	payload, _, _ := strings.Cut(s.flow.Value, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	require.NoError(t, err)
	var f flow
	require.NoError(t, json.Unmarshal(raw, &f))
	party, err := rp.NewRelyingPartyOIDC(b.ctx, b.issuer, "warden", "secret", redirectURL, []string{"openid", "email", "profile"})
	require.NoError(t, err)
	tok, err := party.OAuthConfig().Exchange(b.ctx, s.callback.Query().Get("code"), oauth2.VerifierOption(f.Verifier))
	require.NoError(t, err)
	id, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, id)
	return id
}

func TestBearerIDToken(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, storeURL string) {
		b := setupOn(t, storeURL)
		token := b.idToken(t, "alice@acme.example")
		require.True(t, b.h.Verifier().Accepts(token))
		require.False(t, b.h.Verifier().Accepts("wk_abc"))

		call := func(token string, tenant string) *http.Response {
			req := httptest.NewRequest(http.MethodGet, "/v1/whoami", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if tenant != "" {
				req.Header.Set("X-Warden-Tenant", tenant)
			}
			return b.do(t, req)
		}
		resp := call(token, "")
		raw := body(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, raw)
		var p auth.Principal
		require.NoError(t, json.Unmarshal([]byte(raw), &p))
		require.Equal(t, auth.Principal{Tenant: "acme", Subject: "user:alice@acme.example", Role: auth.RoleOwner,
			Namespace: auth.AllNamespaces, Kind: auth.KindUser, Email: "alice@acme.example"}, p)

		t.Run("tampered", func(t *testing.T) {
			parts := strings.Split(token, ".")
			claims, err := base64.RawURLEncoding.DecodeString(parts[1])
			require.NoError(t, err)
			forged := strings.Replace(string(claims), "alice@acme.example", "carol@acme.example", 1)
			parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
			resp := call(strings.Join(parts, "."), "")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			_, msg := errCode(t, resp)
			require.Contains(t, msg, "signature")
		})
		t.Run("wrong audience", func(t *testing.T) {
			other, err := New(Config{Issuers: []IssuerConfig{{Name: "test", IssuerURL: b.issuer, ClientID: "another-app"}}, RedirectURL: redirectURL},
				b.st, nil, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			_, err = other.Verifier().Verify(b.ctx, token)
			require.ErrorIs(t, err, auth.ErrUnauthenticated)
			require.ErrorContains(t, err, "audience")
		})
		t.Run("several tenants need a choice", func(t *testing.T) {
			carol := b.idToken(t, "carol@acme.example")
			resp := call(carol, "")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			_, msg := errCode(t, resp)
			require.Contains(t, msg, "X-Warden-Tenant")
			resp = call(carol, "beta")
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
		t.Run("a tenant the person does not belong to is refused", func(t *testing.T) {
			resp := call(token, "beta")
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			_, msg := errCode(t, resp)
			require.Contains(t, msg, `not a member of tenant "beta"`)
		})
		t.Run("expired", func(t *testing.T) {
			b.skew.Store(int64(2 * time.Hour)) // the example provider's ID tokens live 1h
			resp := call(token, "")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			_, msg := errCode(t, resp)
			require.Contains(t, msg, "expired")
			// Within the minute of clock skew it is still accepted.
			b.skew.Store(int64(time.Hour + 30*time.Second))
			require.Equal(t, http.StatusOK, call(token, "").StatusCode)
			b.skew.Store(0)
		})
	})
}

func TestTenantSSOConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := tenants.New(b.st, authz.New(b.st, nil), nil, slog.New(slog.DiscardHandler))
	_, err := svc.Signup(b.ctx, tenants.SignupRequest{TenantID: "globex", OwnerEmail: "owner@globex.example"})
	require.NoError(t, err)
	owner := auth.Principal{Tenant: "globex", Subject: "user:owner@globex.example", Email: "owner@globex.example", Kind: auth.KindUser}
	_, err = svc.Invite(b.ctx, owner, "dan@globex.example", auth.RoleViewer, "")
	require.NoError(t, err)
	_, err = svc.CreateNamespace(b.ctx, owner, "payments", "")
	require.NoError(t, err)
	require.NoError(t, b.st.Update(b.ctx, "globex", func(ctx context.Context, tx store.Tx) error {
		o, err := tx.ResourceGet(ctx, resource.Key{Kind: resource.KindTenant, Name: "globex"})
		if err != nil {
			return err
		}
		o.Spec["sso"] = map[string]any{"issuer": b.issuer, "clientId": "warden", "allowedDomains": []any{"globex.example"},
			"roleClaim": "family_name", "roleMapping": map[string]any{"Admins": "admin"}}
		_, err = tx.ResourceUpdate(ctx, o)
		return err
	}))

	s := b.authorize(t, "tenant=globex", "dan@globex.example")
	payload, _, _ := strings.Cut(s.flow.Value, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	require.Contains(t, string(raw), `"i":"sso:globex"`, "the tenant's own connection is used")
	resp := b.callback(t, s)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	session := cookieOf(resp, SessionCookie)
	require.NotNil(t, session)
	_, p, _ := b.whoami(t, session)
	require.Equal(t, "globex", p.Tenant)

	// The mapped role is bound in every namespace.
	require.NoError(t, b.st.View(b.ctx, "globex", func(ctx context.Context, r store.Reader) error {
		for _, ns := range []string{"default", "payments"} {
			o, err := r.ResourceGet(ctx, resource.Key{Kind: resource.KindRoleBinding, Namespace: ns, Name: tenants.SSOBindingName("dan@globex.example")})
			require.NoError(t, err, ns)
			require.Equal(t, "admin", o.Spec["role"])
		}
		return nil
	}))
}
