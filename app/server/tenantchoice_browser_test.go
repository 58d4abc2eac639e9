package server_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/oidc/oidctest"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/tenants"
)

// axeViolation is one rule axe-core reports as violated.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// checkAccessible runs axe-core ($AXE_CORE_JS, else where `make test-deps`
// installs it) on the current page at 1280 and 390 px wide and fails on
// any serious or critical violation.
func checkAccessible(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	path := os.Getenv("AXE_CORE_JS")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, ".cache", "warden", "axe", "node_modules", "axe-core", "axe.min.js")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("axe-core is needed at %s (make test-deps, or set AXE_CORE_JS): %v", path, err)
	}
	for _, width := range []int64{1280, 390} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)), "viewport")
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](string(src)+";true"))
		require.NoError(t, err, "inject axe-core")
		vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](
			`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations)`, chromedp.EvalAwaitPromise))
		require.NoError(t, err, "run axe-core on %s", where)
		for _, v := range vs {
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Errorf("%s at %d px: %s (%s): %s, %+v", where, width, v.ID, v.Impact, v.Help, v.Nodes)
			}
		}
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)), "viewport")
}

// TestBrowserTenantPagesAccessible signs a person in two tenants in
// through the provider's login form in Chromium and runs axe-core on the
// choose-a-tenant page and on /tenants.
func TestBrowserTenantPagesAccessible(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no chromium at %s (set $CHROMIUM): %v", bin, err)
	}
	const carol = "carol@acme.example"
	b := consoleSetup(t, withProvider(t, carol))
	ctx := context.Background()
	now := time.Now().UTC()
	svc := tenants.New(b.store, authz.New(b.store, time.Now), time.Now, slog.New(slog.DiscardHandler))
	_, err := svc.Signup(ctx, tenants.SignupRequest{TenantID: "beta", DisplayName: "Beta Corp", OwnerEmail: carol})
	require.NoError(t, err)
	require.NoError(t, b.store.Update(ctx, server.LocalTenant, func(ctx context.Context, tx store.Tx) error {
		return tx.MemberUpsert(ctx, store.Member{Tenant: server.LocalTenant, Email: carol, Owner: true, Status: store.MemberActive, CreatedAt: now})
	}))

	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	cctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancel)

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	require.NoError(t, chromedp.Do(cctx,
		chromedp.Navigate(b.url+"/auth/login"),
		chromedp.WaitVisible(css("#username")),
		chromedp.SendKeys(css("#username"), carol),
		chromedp.SendKeys(css("#password"), oidctest.Password),
		chromedp.Click(css(`button[type="submit"]`)),
		chromedp.WaitVisible(css("#choose-heading")),
	), "sign in through the provider")
	checkAccessible(t, cctx, "choose a tenant")

	require.NoError(t, chromedp.Do(cctx,
		chromedp.Click(chromedp.Search(`//button[contains(., "Continue to Beta Corp")]`)),
		chromedp.WaitVisible(css(".site-nav")),
		chromedp.Navigate(b.url+"/tenants"),
		chromedp.WaitVisible(css("#tenants-caption")),
		chromedp.WaitVisible(css("#tenant-switch")),
	), "choose beta and open /tenants")
	checkAccessible(t, cctx, "/tenants")
}
