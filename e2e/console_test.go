package e2e_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	appaudit "github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/oidc/oidctest"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/tenants"
	"github.com/warden-dev/warden/web"
)

// defaultChromium is Debian's chromium, installed by `make test-deps`;
// $CHROMIUM (which the Makefile exports) names another.
const defaultChromium = "/usr/bin/chromium"

// chromiumPath is the browser the tests drive: $CHROMIUM, else
// defaultChromium.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return defaultChromium
}

// realConsole starts a real OpenID Provider (zitadel/oidc's example OP)
// whose users are the given e-mail addresses, and the real server.New over
// SQLite with that provider as its only issuer (and self-service sign-up
// when signup is set). It returns the server's base URL, the provider's
// and the store.
func realConsole(t *testing.T, signup bool, emails ...string) (base, issuer string, st store.Store) {
	t.Helper()
	bg := context.Background()
	log := slog.New(slog.DiscardHandler)
	// Warden's listener first: the provider must know the redirect URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base = "http://" + ln.Addr().String()
	issuer = oidctest.Provider(t, base+"/auth/callback", emails...)

	st, err = backend.Open(bg, "sqlite://"+t.TempDir()+"/w.db", backend.Options{Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	srv, err := server.New(server.Config{Store: st, Logger: log, ControlAddr: ln.Addr().String(), GatewayAddr: server.GatewayOff, Now: time.Now,
		Signup: signup,
		OIDC: &oidc.Config{Issuers: []oidc.IssuerConfig{{Name: "Test IdP", IssuerURL: issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret}},
			RedirectURL: base + "/auth/callback"}})
	require.NoError(t, err)
	sctx, stop := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	return base, issuer, st
}

// browser starts headless chromium with a fresh profile and collects every
// uncaught exception, console error and CSP violation into problems.
func browser(t *testing.T) (ctx context.Context, problems func() []string) {
	t.Helper()
	chromium := chromiumPath()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("browser tests need chromium at %s (%v): run `make test-deps` (apt-get install -y chromium), or set CHROMIUM to another chromium or chrome", chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })

	// The first call starts the browser; it must not carry a timeout.
	// DevTools-injected scripts are exempt from the page's CSP, so this
	// listener sees every violation the CSP reports.
	require.NoError(t, chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__csp = []; document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`,
		})
		return err
	})), "start chromium")

	var mu sync.Mutex
	var seen []string
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// Network entries are answers such as the 422 of a form with
			// errors, which the page shows on purpose.
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source != "network" {
				mu.Lock()
				seen = append(seen, m.String())
				mu.Unlock()
			}
		}
	}()
	ctx, cancelC := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancelC)
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// checkCSP fails on any CSP violation seen by the current document.
func checkCSP(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || []`))
	require.NoError(t, err)
	require.Empty(t, v, "CSP violations on %s", where)
}

// screenshotDir is where a test's screenshots go: $WARDEN_SCREENSHOTS
// when set (to keep them), else the test's own temporary directory, never
// a path shared with other runs.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("WARDEN_SCREENSHOTS"); d != "" {
		d = filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(screenshotDir(t), "console-"+name+".png")
	require.NoError(t, os.WriteFile(path, buf, 0o644))
	t.Logf("screenshot: %s", path)
}

// TestConsoleInBrowser drives the console of the real server in headless
// chromium: sign-up (with its form token and same-origin check), sign-in
// through a real OpenID Provider, members, namespaces, an API key shown
// once and then used as a bearer token on the real API, the audit log with
// an htmx filter, keyboard order and sign-out, with no script errors and no
// CSP violations anywhere.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	base, _, _ := realConsole(t, true, "ada@acme.test")
	ctx, problems := browser(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...), what)
	}
	// text waits for sel, then reads its text in one script: an htmx swap
	// may replace the node between a query and a read by node id.
	text := func(sel string) string {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))), "wait for %s", sel)
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).innerText || ""`))
		require.NoError(t, err, "text of %s", sel)
		return s
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		require.NoError(t, err, js)
		return s
	}
	css, xpath := func(s string) chromedp.CSS { return chromedp.CSS(s) }, func(s string) chromedp.Search { return chromedp.Search(s) }

	// Security headers on a console page.
	resp, err := http.Get(base + "/signin")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, web.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	require.Equal(t, "same-origin", resp.Header.Get("Referrer-Policy"))

	// Sign-up: an empty submit shows field errors, then a real one,
	// which goes through the provider: the tenant is created with the
	// address the provider verified, and its owner is signed in.
	do("sign-up errors",
		chromedp.Navigate(base+"/signup"),
		chromedp.WaitVisible(css(`#f-organization`)),
		chromedp.Click(css(`form button[type=submit]`)),
		chromedp.WaitVisible(css(`#f-tenant-error`)),
	)
	require.Equal(t, "true", eval(`document.getElementById("f-tenant").getAttribute("aria-invalid")`))
	require.Contains(t, eval(`document.getElementById("f-tenant").getAttribute("aria-describedby")`), "f-tenant-error")
	require.Equal(t, "null", eval(`String(document.getElementById("f-email"))`), "the form asks for no e-mail: the provider proves it")
	screenshot(t, ctx, "signup-errors")
	do("sign-up",
		chromedp.SendKeys(css(`#f-organization`), "Acme Robotics"),
		chromedp.SendKeys(css(`#f-tenant`), "acme"),
		chromedp.SendKeys(css(`#f-name`), "Ada Lovelace"),
		chromedp.Click(css(`form button[type=submit]`)),
		chromedp.WaitVisible(css(`#username`)),
		chromedp.SendKeys(css(`#username`), "ada@acme.test"),
		chromedp.SendKeys(css(`#password`), oidctest.Password),
		chromedp.Click(css(`button[type=submit]`)),
		// The owner may decide approvals: they land on the inbox.
		chromedp.WaitVisible(css(`#inbox`)),
	)
	checkCSP(t, ctx, "/")
	screenshot(t, ctx, "signed-up")
	do("members",
		chromedp.Navigate(base+"/members"),
		chromedp.WaitVisible(css(`#members-region`)),
	)
	require.Contains(t, text(`#members-region`), "ada@acme.test")

	// Invite through htmx: the region is replaced in place.
	do("invite",
		chromedp.SendKeys(css(`#invite-email`), "grace@acme.test"),
		chromedp.SetValue(css(`#invite-role`), "editor"),
		chromedp.Click(xpath(`//button[contains(., "Send invitation")]`)),
		chromedp.WaitVisible(xpath(`//div[@role="status" and contains(., "Invited grace@acme.test")]`)),
	)
	require.Contains(t, text(`#members-region table`), "grace@acme.test")
	checkCSP(t, ctx, "/members")
	screenshot(t, ctx, "members")

	// Namespaces.
	do("namespaces",
		chromedp.Navigate(base+"/namespaces"),
		chromedp.SendKeys(css(`#namespace-name`), "payments-prod"),
		chromedp.Click(xpath(`//button[contains(., "Create namespace")]`)),
		chromedp.WaitVisible(xpath(`//div[@role="status" and contains(., "Created namespace payments-prod")]`)),
	)
	screenshot(t, ctx, "namespaces")

	// API keys: the keyboard reaches the primary button from the first
	// field, Enter on it creates the key and the secret shows once.
	do("api keys page",
		chromedp.Navigate(base+"/apikeys"),
		chromedp.WaitVisible(css(`#key-name`)),
		chromedp.SendKeys(css(`#key-name`), "ci-deploy"),
		chromedp.Focus(css(`#key-name`)),
	)
	var order []string
	for i := 0; i < 6; i++ {
		do("tab", chromedp.KeyEvent(kb.Tab))
		id := eval(`document.activeElement.id || document.activeElement.tagName`)
		order = append(order, id)
		if id == "create-key" {
			break
		}
	}
	require.Equal(t, []string{"key-namespace", "key-role", "key-agent", "key-expires", "create-key"}, order, "tab order from the name field")
	do("create key", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#new-secret`)))
	secret := text(`#new-secret`)
	require.True(t, strings.HasPrefix(secret, "wk_"), "secret %q", secret)
	checkCSP(t, ctx, "/apikeys")
	screenshot(t, ctx, "apikeys-secret")

	// Reload: the secret is gone for good.
	do("reload", chromedp.Navigate(base+"/apikeys"), chromedp.WaitVisible(xpath(`//th[contains(., "ci-deploy")]`)))
	require.Equal(t, "absent", eval(`document.getElementById("new-secret") ? "present" : "absent"`))
	require.NotContains(t, eval(`document.documentElement.outerHTML`), secret)
	screenshot(t, ctx, "apikeys")

	// The same key works as a bearer token on the real API, in its
	// tenant and in no other.
	for tenant, want := range map[string]int{"": http.StatusOK, "acme": http.StatusOK, "globex": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/namespaces/default/agents", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		if tenant != "" {
			req.Header.Set(auth.HeaderTenant, tenant)
		}
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "X-Warden-Tenant %q", tenant)
	}

	// Audit log, filtered through htmx (the URL follows).
	do("audit",
		chromedp.Navigate(base+"/audit"),
		chromedp.WaitVisible(css(`#audit-results`)),
	)
	do("audit filter",
		chromedp.SendKeys(css(`#f-verb`), "invite"),
		chromedp.Click(xpath(`//form[@role="search"]//button`)),
	)
	do("filtered", chromedp.WaitVisible(xpath(`//caption[contains(., "filtered")]`)))
	require.Contains(t, text(`#audit-results`), "members/grace@acme.test")
	require.NotContains(t, text(`#audit-results`), "apikeys/ci-deploy")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "verb=invite")
	checkCSP(t, ctx, "/audit")
	screenshot(t, ctx, "audit")

	// On a phone the page does not scroll sideways; wide tables scroll
	// inside their own region.
	do("phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/members"), chromedp.WaitVisible(css(`#members-region`)))
	screenshot(t, ctx, "members-phone")
	require.Equal(t, "fits", eval(`document.documentElement.scrollWidth <= window.innerWidth ? "fits" : "overflows by " + (document.documentElement.scrollWidth - window.innerWidth)`))
	do("desktop", chromedp.EmulateReset())

	// The skip link is the first stop of the keyboard.
	do("skip link", chromedp.Navigate(base+"/members"), chromedp.WaitVisible(css(`#members-region`)), chromedp.KeyEvent(kb.Tab))
	require.Equal(t, "Skip to main content", eval(`document.activeElement.textContent`))

	// Sign out, and the console is closed again.
	do("sign out",
		chromedp.Click(xpath(`//button[contains(., "Sign out")]`)),
		chromedp.WaitVisible(xpath(`//h1[contains(., "Sign in to Warden")]`)),
		chromedp.Navigate(base+"/members"),
		chromedp.WaitVisible(xpath(`//h1[contains(., "Sign in to Warden")]`)),
	)

	require.Empty(t, problems(), "script errors or CSP violations in the browser")
}

// TestConsoleOIDCCodeFlowInBrowser signs in through the real code flow:
// the console's button, /auth/login, a real OpenID Provider's login form
// (zitadel/oidc example OP) filled in by chromium, the callback and the
// session, all served by the real server.New over SQLite; then the person
// creates an API key in the console and that key, and the same person's ID
// token from the provider, are accepted as bearer tokens on /v1; sign-out
// ends the session.
func TestConsoleOIDCCodeFlowInBrowser(t *testing.T) {
	t.Parallel()
	base, issuer, st := realConsole(t, false, "alice@acme.example")
	_, err := tenants.New(st, nil, time.Now, slog.New(slog.DiscardHandler)).Signup(context.Background(),
		tenants.SignupRequest{TenantID: "acme", DisplayName: "Acme", OwnerEmail: "alice@acme.example"})
	require.NoError(t, err)

	ctx, problems := browser(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...), what)
	}
	css, xpath := func(s string) chromedp.CSS { return chromedp.CSS(s) }, func(s string) chromedp.Search { return chromedp.Search(s) }

	do("sign in at the provider",
		chromedp.Navigate(base+"/signin?tenant=acme"),
		chromedp.Click(xpath(`//a[contains(., "Continue with Test IdP")]`)),
		chromedp.WaitVisible(css(`#username`)),
		chromedp.SendKeys(css(`#username`), "alice@acme.example"),
		chromedp.SendKeys(css(`#password`), oidctest.Password),
		chromedp.Click(css(`button[type=submit]`)),
		// The owner may decide approvals: they land on the inbox.
		chromedp.WaitVisible(css(`#inbox`)),
		chromedp.Navigate(base+"/members"),
		chromedp.WaitVisible(css(`#members-region`)),
	)
	members, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#members-region`)))
	require.NoError(t, err)
	require.Contains(t, members, "alice@acme.example")
	require.Contains(t, members, "active", "the first sign-in activates the member")
	checkCSP(t, ctx, "/members after the code flow")
	var signins []appaudit.Record
	require.NoError(t, st.View(context.Background(), "acme", func(ctx context.Context, r store.Reader) error {
		var err error
		signins, err = r.AuditList(ctx, store.AuditListParams{Verb: "signin", Limit: 10})
		return err
	}))
	require.Len(t, signins, 1, "the sign-in is audited")
	require.Equal(t, "user:alice@acme.example", signins[0].Actor)
	screenshot(t, ctx, "oidc-members")

	do("create a key",
		chromedp.Navigate(base+"/apikeys"),
		chromedp.SendKeys(css(`#key-name`), "sdk"),
		chromedp.SetValue(css(`#key-role`), "editor"),
		chromedp.Click(css(`#create-key`)),
		chromedp.WaitVisible(css(`#new-secret`)),
	)
	secret, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#new-secret`)))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, "wk_"))

	// The key made in the console, and the same person's ID token from the
	// provider, both work as bearer tokens on the real API.
	agents := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/namespaces/default/agents", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, agents(secret))
	require.Equal(t, http.StatusOK, agents(oidctest.IDToken(t, issuer, base+"/auth/callback", "alice@acme.example")))

	do("sign out",
		chromedp.Click(xpath(`//button[contains(., "Sign out")]`)),
		chromedp.WaitVisible(xpath(`//h1[contains(., "Sign in to Warden")]`)),
		chromedp.Navigate(base+"/members"),
		chromedp.WaitVisible(xpath(`//h1[contains(., "Sign in to Warden")]`)),
	)
	require.Empty(t, problems(), "script errors or CSP violations in the browser")
}
