package web_test

import (
	"context"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	appaudit "github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/web"
	"github.com/warden-dev/warden/web/apikeys"
	"github.com/warden-dev/warden/web/audit"
	"github.com/warden-dev/warden/web/members"
	"github.com/warden-dev/warden/web/signup"
	"github.com/warden-dev/warden/web/webtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html")

const csrf = "csrf-test-token"

var clock = time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

type bundle struct {
	app  *fiber.App
	fake *webtest.Fake
	// owner and viewer are session cookies of acme's owner and a viewer.
	owner, viewer string
}

// setup serves the console over a fake with tenant acme (owner ada, viewer
// bob), a second namespace, two API keys (one revoked) and audit records.
func setup(t *testing.T) bundle {
	t.Helper()
	fake := webtest.New(func() time.Time { return clock })
	fake.FixedCSRF = csrf
	fake.FixedSecrets = []string{"wk_first-secret-shown-once", "wk_second-secret-shown-once", "wk_third-secret-shown-once"}
	ctx := t.Context()
	_, err := fake.Signup(ctx, signup.Request{Tenant: "acme", DisplayName: "Acme Robotics", OwnerName: "Ada Lovelace"}, "ada@acme.test")
	require.NoError(t, err)
	b := bundle{fake: fake}
	b.owner = fake.SignIn("acme", "ada@acme.test")
	p, _ := fake.Session(b.owner)
	require.NoError(t, fake.Invite(ctx, p, inv("bob@acme.test", "viewer")))
	require.NoError(t, fake.CreateNamespace(ctx, p, "payments-prod"))
	_, k, err := fake.CreateAPIKey(ctx, p, keyReq("old-ci"))
	require.NoError(t, err)
	require.NoError(t, fake.RevokeAPIKey(ctx, p, k.ID))
	_, k, err = fake.CreateAPIKey(ctx, p, keyReq("deploy-bot"))
	require.NoError(t, err)
	fake.TouchAPIKey("acme", k.ID, clock.Add(-90*time.Minute))
	fake.AddAudit(appaudit.Record{Time: clock, Tenant: "acme", Actor: "apikey:deploy-bot", Verb: "apply", Namespace: "payments-prod",
		Resource: "agents/refunds", Outcome: appaudit.OutcomeDenied, Policy: "role:viewer@*", Reason: "forbidden"})
	b.viewer = fake.SignIn("acme", "bob@acme.test")

	app := fiber.New()
	fake.Mount(app)
	cs, err := web.New(fake.Deps())
	require.NoError(t, err)
	cs.Register(app)
	b.app = app
	return b
}

type scenario struct {
	name       string
	method     string
	path       string
	form       url.Values
	session    string // "owner", "viewer" or "" (signed out)
	htmx       bool
	noCSRF     bool
	status     int
	location   string
	contains   []string
	notContain []string
	golden     string
}

func (b bundle) do(t *testing.T, s scenario) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if s.form != nil {
		if !s.noCSRF {
			s.form.Set("csrf_token", csrf)
		}
		body = strings.NewReader(s.form.Encode())
	}
	req := httptest.NewRequest(s.method, s.path, body)
	if s.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if s.htmx {
		req.Header.Set("HX-Request", "true")
	}
	switch s.session {
	case "owner":
		req.AddCookie(&http.Cookie{Name: webtest.SessionCookie, Value: b.owner})
	case "viewer":
		req.AddCookie(&http.Cookie{Name: webtest.SessionCookie, Value: b.viewer})
	}
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(out)
}

func TestConsoleHandlers(t *testing.T) {
	t.Parallel()
	for _, s := range []scenario{
		{name: "root signed out", method: "GET", path: "/", status: 303, location: "/signin"},
		{name: "root signed in", method: "GET", path: "/", session: "owner", status: 303, location: "/members"},
		{name: "members needs a session", method: "GET", path: "/members", status: 303, location: "/signin"},
		{name: "htmx without session redirects the page", method: "GET", path: "/apikeys", htmx: true, status: 401},
		{name: "signin page", method: "GET", path: "/signin", status: 200, golden: "signin",
			contains: []string{"Continue with Test IdP", `href="/auth/login?issuer=test"`, "Create a tenant"}},
		{name: "signin for a tenant has its SSO first", method: "GET", path: "/signin?tenant=acme&welcome=1", status: 200, golden: "signin-tenant",
			contains: []string{"Sign in to acme", "Continue with Acme Robotics SSO", `href="/auth/login?issuer=sso-acme&amp;tenant=acme"`, "Your tenant is ready"}},
		{name: "signin never echoes an unknown error", method: "GET", path: "/signin?error=%3Cscript%3E", status: 200,
			contains: []string{"Sign-in failed. Try again."}, notContain: []string{"<script>"}},
		{name: "signup page", method: "GET", path: "/signup", status: 200, golden: "signup",
			contains: []string{`name="csrf_token" value="csrf-test-token"`, `aria-describedby="f-tenant-hint f-tenant-error"`}},
		{name: "signup with errors", method: "POST", path: "/signup", form: url.Values{"tenant": {"A!"}}, status: 422, golden: "signup-errors",
			contains: []string{`aria-invalid="true"`, "Enter your organisation’s name.", "Use 3–40 lower-case letters"}},
		{name: "signup taken tenant", method: "POST", path: "/signup", status: 422,
			form:     url.Values{"organization": {"Other"}, "tenant": {"acme"}, "name": {"Eve"}},
			contains: []string{"The tenant id acme is taken"}},
		{name: "signup goes to the identity provider", method: "POST", path: "/signup", status: 303, location: webtest.SignupIdP + "?tenant=globex",
			form: url.Values{"organization": {"Globex"}, "tenant": {"globex"}, "name": {"Hank"}}},
		{name: "post without CSRF token is refused", method: "POST", path: "/signup", noCSRF: true, status: 403,
			form: url.Values{"organization": {"Globex"}, "tenant": {"globex2"}, "name": {"Hank"}}},
		{name: "signout hands over to the OIDC logout", method: "POST", path: "/signout", form: url.Values{}, session: "owner", status: 307, location: "/auth/logout"},

		{name: "members page", method: "GET", path: "/members", session: "owner", status: 200, golden: "members",
			contains: []string{"ada@acme.test", "bob@acme.test", "Send invitation", `hx-headers="{&#34;X-CSRF-Token&#34;:&#34;csrf-test-token&#34;}"`, `aria-current="page"`}},
		{name: "members for a viewer: no invite, no remove", method: "GET", path: "/members", session: "viewer", status: 200,
			contains: []string{"ada@acme.test"}, notContain: []string{"Send invitation", "/remove"}},
		{name: "invite with a bad e-mail", method: "POST", path: "/members/invite", session: "owner", form: url.Values{"email": {"x"}, "role": {"viewer"}}, status: 422,
			contains: []string{`aria-invalid="true"`, "Enter an e-mail address"}},
		{name: "invite through htmx returns the region", method: "POST", path: "/members/invite", session: "owner", htmx: true,
			form: url.Values{"email": {"grace@acme.test"}, "role": {"editor"}, "namespace": {"payments-prod"}}, status: 200,
			contains: []string{`id="members-region"`, "Invited grace@acme.test as editor.", "editor in payments-prod"}, notContain: []string{"<html"}},
		{name: "invite without htmx redirects", method: "POST", path: "/members/invite", session: "owner",
			form: url.Values{"email": {"hedy@acme.test"}, "role": {"viewer"}}, status: 303, location: "/members"},
		{name: "invite by a viewer shows the refusal inline", method: "POST", path: "/members/invite", session: "viewer", htmx: true,
			form: url.Values{"email": {"x@acme.test"}, "role": {"viewer"}}, status: 200, contains: []string{"You do not have permission to invite x@acme.test."}},
		{name: "remove a member", method: "POST", path: "/members/bob@acme.test/remove", session: "owner", htmx: true, form: url.Values{}, status: 200,
			contains: []string{"Removed bob@acme.test."}},

		{name: "namespaces page", method: "GET", path: "/namespaces", session: "owner", status: 200, golden: "namespaces",
			contains: []string{"payments-prod", "default"}},
		{name: "namespace with a bad name", method: "POST", path: "/namespaces", session: "owner", form: url.Values{"name": {"Bad_Name"}}, status: 422,
			contains: []string{"namespace-name-error", "Use 1–63 lower-case letters"}},
		{name: "namespace that exists", method: "POST", path: "/namespaces", session: "owner", htmx: true, form: url.Values{"name": {"default"}}, status: 200,
			contains: []string{"That already exists."}},

		{name: "api keys page never shows secrets or hashes", method: "GET", path: "/apikeys", session: "owner", status: 200, golden: "apikeys",
			contains:   []string{"deploy-bot", "old-ci", "revoked", "/apikeys/key-2/revoke", "<td>2026-11-02 08:00</td>", "Last used (UTC)", `name="agent"`, `name="expires"`},
			notContain: []string{"wk_first-secret-shown-once", "wk_second-secret-shown-once", "/apikeys/key-1/revoke", auth.HashAPIKey("wk_second-secret-shown-once")}},
		{name: "api key create shows the secret once", method: "POST", path: "/apikeys", session: "owner", htmx: true,
			form: url.Values{"name": {"sdk"}, "namespace": {"payments-prod"}, "role": {"editor"}}, status: 200, golden: "apikeys-created",
			contains: []string{`id="new-secret"`, "Copy the secret of “sdk” now"}},
		{name: "api key with no name", method: "POST", path: "/apikeys", session: "owner", form: url.Values{"name": {""}, "role": {"viewer"}}, status: 422,
			contains: []string{"key-name-error", "Give the key a name"}, notContain: []string{`id="new-secret"`}},
		{name: "api key with owner role is refused", method: "POST", path: "/apikeys", session: "owner", form: url.Values{"name": {"x"}, "role": {"owner"}}, status: 422,
			contains: []string{"Choose one of the offered roles."}},
		{name: "api key bound to an agent with an expiry", method: "POST", path: "/apikeys", session: "owner", htmx: true,
			form: url.Values{"name": {"triage"}, "namespace": {"payments-prod"}, "role": {"editor"}, "agent": {"triage-bot"}, "expires": {"720h"}}, status: 200,
			contains: []string{`id="new-secret"`, "<code>triage-bot</code>", "<td>agent</td>", "2026-12-02 09:30"}},
		{name: "api key bound to an agent needs a namespace", method: "POST", path: "/apikeys", session: "owner",
			form: url.Values{"name": {"triage"}, "namespace": {"*"}, "role": {"viewer"}, "agent": {"triage-bot"}}, status: 422,
			contains: []string{"key-agent-error", "scoped to the agent&#39;s namespace", `value="triage-bot" aria-invalid="true"`}, notContain: []string{`id="new-secret"`}},
		{name: "api key with a malformed agent", method: "POST", path: "/apikeys", session: "owner",
			form: url.Values{"name": {"triage"}, "namespace": {"default"}, "role": {"viewer"}, "agent": {"Triage Bot"}}, status: 422,
			contains: []string{"lower-case letters, digits and hyphens"}},
		{name: "api key with an expiry not offered", method: "POST", path: "/apikeys", session: "owner",
			form: url.Values{"name": {"x"}, "role": {"viewer"}, "expires": {"-1h"}}, status: 422,
			contains: []string{"Choose one of the offered expiries."}, notContain: []string{`id="new-secret"`}},
		{name: "revoke", method: "POST", path: "/apikeys/key-2/revoke", session: "owner", htmx: true, form: url.Values{}, status: 200,
			contains: []string{"Key revoked"}, notContain: []string{"/apikeys/key-2/revoke"}},
		{name: "revoke unknown", method: "POST", path: "/apikeys/nope/revoke", session: "owner", htmx: true, form: url.Values{}, status: 200,
			contains: []string{"It no longer exists; reload the page."}},

		{name: "audit page", method: "GET", path: "/audit", session: "owner", status: 200, golden: "audit",
			contains: []string{"agents/refunds", "denied", "forbidden"}},
		{name: "audit filter through htmx returns the results", method: "GET", path: "/audit?verb=apply&namespace=payments-prod", session: "owner", htmx: true, status: 200,
			contains: []string{`id="audit-results"`, "agents/refunds", "(filtered)"}, notContain: []string{"<html", "namespaces/payments-prod"}},
		{name: "audit filter by verb", method: "GET", path: "/audit?verb=invite", session: "owner", status: 200,
			contains: []string{"members/bob@acme.test"}, notContain: []string{"agents/refunds"}},

		{name: "trace overview", method: "GET", path: "/traces", session: "owner", status: 200, golden: "traces",
			contains: []string{"stripe.refund", "gpt-4o", "10.0%", "180ms"}},
		{name: "trace waterfall", method: "GET", path: "/traces/5b8efff798038103d269b633813fc60c", session: "owner", status: 200, golden: "trace",
			contains: []string{"warden.step.invoke", "toolCallRequest +3.00ms", `x="100" y="1" width="875"`, "3 spans, 40ms, 2 with errors",
				`href="/toolcalls/default/` + webtest.FakeToolCall + `"`}},
		{name: "unknown trace", method: "GET", path: "/traces/00000000000000000000000000000000", session: "owner", status: 404,
			contains: []string{"No trace 00000000000000000000000000000000 in namespace default."}},
		{name: "malformed trace id", method: "GET", path: "/traces/xyz", session: "owner", status: 400, contains: []string{"32 hexadecimal digits"}},
		{name: "open a trace from the form", method: "GET", path: "/traces/open?id=ABC&namespace=prod", session: "owner", status: 303},
		{name: "traces need a session", method: "GET", path: "/traces", status: 303},

		{name: "static asset with the current hash is cached for a year", method: "GET", path: staticURL(t, "style.css"), status: 200,
			contains: []string{"--primary"}},
		{name: "unknown static asset", method: "GET", path: "/static/nope.js", status: 404},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			resp, body := b.do(t, s)
			require.Equal(t, s.status, resp.StatusCode, body)
			if s.location != "" {
				require.Equal(t, s.location, resp.Header.Get("Location"))
			}
			for _, c := range s.contains {
				require.Contains(t, body, c)
			}
			for _, c := range s.notContain {
				require.NotContains(t, body, c)
			}
			if resp.StatusCode != fiber.StatusForbidden { // the fake CSRF check answers before the console
				require.Equal(t, web.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
				requireNoInline(t, body)
			}
			if s.golden != "" {
				golden(t, s.golden, body)
			}
		})
	}
}

// TestSecretShownOnce: after a create, no later page carries the secret.
func TestSecretShownOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, body := b.do(t, scenario{method: "POST", path: "/apikeys", session: "owner", form: url.Values{"name": {"sdk"}, "role": {"viewer"}}})
	m := regexp.MustCompile(`id="new-secret"[^>]*>(wk_[^<]+)<`).FindStringSubmatch(body)
	require.Len(t, m, 2, body)
	secret := m[1]
	for _, path := range []string{"/apikeys", "/members", "/audit", "/namespaces"} {
		_, body := b.do(t, scenario{method: "GET", path: path, session: "owner"})
		require.NotContains(t, body, secret, path)
	}
}

func TestStaticCaching(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, _ := b.do(t, scenario{method: "GET", path: staticURL(t, "htmx.min.js")})
	require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
	require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	resp, _ = b.do(t, scenario{method: "GET", path: "/static/htmx.min.js?v=old"})
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
}

func TestNewNamesMissingDeps(t *testing.T) {
	t.Parallel()
	_, err := web.New(web.Deps{})
	require.ErrorContains(t, err, "web.Deps.Members is required")
	require.ErrorContains(t, err, "web.Deps.Principal is required")
}

var staticRef = regexp.MustCompile(`/static/[a-z.]+\?v=[0-9a-f]{12}`)

func staticURL(t *testing.T, name string) string {
	t.Helper()
	b := setup(t)
	_, body := b.do(t, scenario{method: "GET", path: "/signin"})
	for _, u := range staticRef.FindAllString(body, -1) {
		if strings.Contains(u, "/"+name+"?") {
			return u
		}
	}
	t.Fatalf("no URL for %s in the page", name)
	return ""
}

// requireNoInline fails on inline scripts, inline styles and inline event
// handlers, which the CSP would block.
func requireNoInline(t *testing.T, body string) {
	t.Helper()
	require.NotRegexp(t, `<script(?:\s[^>]*)?>[^<]`, body, "inline script")
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
		require.Contains(t, tag, " src=", "script without src: %s", tag)
	}
	require.NotContains(t, body, "<style")
	require.NotRegexp(t, `\sstyle=`, body, "inline style attribute")
	require.NotRegexp(t, `\son[a-z]+=`, body, "inline event handler")
	require.NotContains(t, body, "hx-on")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.html")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./web -update to create %s", path)
	require.Equal(t, string(want), got, "rendered page differs from %s (go test ./web -update rewrites it)", path)
}

func inv(email, role string) members.Invitation {
	return members.Invitation{Email: email, Role: role, Namespace: auth.AllNamespaces}
}

func keyReq(name string) apikeys.Request {
	return apikeys.Request{Name: name, Namespace: auth.AllNamespaces, Role: auth.RoleEditor}
}

// TestScreensAskTheAuthorizer: what the members, namespaces and API key
// screens offer follows Deps.Authorize (app/authz in production), not the
// role a principal carries: an owner the authorizer refuses is offered
// nothing, a viewer it allows everything.
func TestScreensAskTheAuthorizer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		session string
		allow   bool
	}{{"owner", false}, {"viewer", true}} {
		b := setup(t)
		deps := b.fake.Deps()
		var asked []string
		deps.Authorize = func(_ context.Context, _ auth.Principal, verb, ns, obj string) error {
			asked = append(asked, verb+" "+obj+"@"+ns)
			if tc.allow {
				return nil
			}
			return auth.ErrForbidden
		}
		app := fiber.New()
		b.fake.Mount(app)
		cs, err := web.New(deps)
		require.NoError(t, err)
		cs.Register(app)
		b.app = app
		for path, offer := range map[string]string{"/members": "Invite a person", "/namespaces": "Create a namespace", "/apikeys": "Create a key"} {
			resp, body := b.do(t, scenario{method: http.MethodGet, path: path, session: tc.session})
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			if tc.allow {
				require.Contains(t, body, offer, "%s as %s", path, tc.session)
			} else {
				require.NotContains(t, body, offer, "%s as %s", path, tc.session)
			}
		}
		require.Contains(t, asked, "create members@")
		require.Contains(t, asked, "apply namespaces@")
		require.Contains(t, asked, "create apikeys@")
	}
}

// TestAuditNewestFirst: the audit page lists the newest record first and
// pages backwards to older records with ?before=.
func TestAuditNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// setup recorded records 1..n; add enough to fill more than one page.
	for i := range audit.PageSize + 5 {
		b.fake.AddAudit(appaudit.Record{Time: clock.Add(time.Duration(i) * time.Second), Tenant: "acme", Actor: "apikey:ci",
			Verb: "apply", Namespace: "default", Resource: fmt.Sprintf("agents/a%03d", i), Outcome: appaudit.OutcomeAllowed})
	}
	order := func(body string) []string {
		return regexp.MustCompile(`agents/a\d{3}`).FindAllString(body, -1)
	}
	_, body := b.do(t, scenario{method: "GET", path: "/audit?actor=apikey:ci", session: "owner"})
	got := order(body)
	require.Len(t, got, audit.PageSize)
	require.Equal(t, fmt.Sprintf("agents/a%03d", audit.PageSize+4), got[0], "newest first")
	require.True(t, slices.IsSortedFunc(got, func(a, b string) int { return strings.Compare(b, a) }), got)

	next := regexp.MustCompile(`href="(/audit\?[^"]*before=\d+[^"]*)"`).FindStringSubmatch(body)
	require.Len(t, next, 2, "a link to older records")
	_, body = b.do(t, scenario{method: "GET", path: html.UnescapeString(next[1]), session: "owner"})
	require.Equal(t, []string{"agents/a004", "agents/a003", "agents/a002", "agents/a001", "agents/a000"}, order(body))
	require.Contains(t, body, "Newest records")
	require.NotContains(t, body, "Older records")
}

// TestMemberRoleChange: a member's role can be changed and owner granted;
// owner is offered and accepted only when the authorizer lets the caller
// grant ownership (authz.ObjMembersOwner).
func TestMemberRoleChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, body := b.do(t, scenario{method: "GET", path: "/members", session: "owner"})
	require.Contains(t, body, `action="/members/bob@acme.test/role"`)
	require.Contains(t, roleSelect(t, body), `<option value="owner">owner</option>`)
	require.NotContains(t, body, `action="/members/ada@acme.test/role"`, "not one's own row")

	_, body = b.do(t, scenario{method: "POST", path: "/members/bob@acme.test/role", session: "owner", htmx: true,
		form: url.Values{"role": {"editor"}, "namespace": {"payments-prod"}}})
	require.Contains(t, body, "bob@acme.test is now editor in payments-prod.")
	require.Contains(t, body, "editor in payments-prod")

	_, body = b.do(t, scenario{method: "POST", path: "/members/bob@acme.test/role", session: "owner", htmx: true,
		form: url.Values{"role": {"owner"}}})
	require.Contains(t, body, "bob@acme.test is now an owner.")
	ms, err := b.fake.Members(t.Context(), auth.Principal{Tenant: "acme"})
	require.NoError(t, err)
	for _, m := range ms {
		if m.Email == "bob@acme.test" {
			require.True(t, m.Owner)
		}
	}

	// An authorizer that lets the caller manage members but not grant
	// ownership (a non-owner): owner is neither offered nor accepted.
	b = setup(t)
	deps := b.fake.Deps()
	var asked []string
	deps.Authorize = func(_ context.Context, _ auth.Principal, verb, ns, obj string) error {
		asked = append(asked, verb+" "+obj+"@"+ns)
		if obj == authz.ObjMembersOwner {
			return auth.ErrForbidden
		}
		return nil
	}
	app := fiber.New()
	b.fake.Mount(app)
	cs, err := web.New(deps)
	require.NoError(t, err)
	cs.Register(app)
	b.app = app
	_, body = b.do(t, scenario{method: "GET", path: "/members", session: "owner"})
	require.Contains(t, body, `action="/members/bob@acme.test/role"`)
	require.NotContains(t, roleSelect(t, body), `<option value="owner">owner</option>`)
	require.Contains(t, roleSelect(t, body), `<option value="admin">admin</option>`)
	require.Contains(t, asked, "create members/owner@")
	resp, body := b.do(t, scenario{method: "POST", path: "/members/bob@acme.test/role", session: "owner",
		form: url.Values{"role": {"owner"}}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "Choose one of the offered roles.")
}

// roleSelect is bob's change-role select.
func roleSelect(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<select id="role-bob-at-acme-test" name="role">(.*?)</select>`).FindStringSubmatch(body)
	require.Len(t, m, 2, body)
	return m[1]
}
