package notifications_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
)

// chromium is the browser of the browser test: $CHROMIUM, else Debian's.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browser starts headless chromium and collects script errors and CSP
// violations.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	if _, err := os.Stat(chromium()); err != nil {
		t.Skipf("no chromium at %s (set $CHROMIUM or apt-get install -y chromium): %v", chromium(), err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium()), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	require.NoError(t, chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__csp = []; document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`,
		})
		return err
	})), "start chromium")
	var mu sync.Mutex
	var seen []string
	go func() {
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source != "network" {
				mu.Lock()
				seen = append(seen, m.String())
				mu.Unlock()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// axePath is axe-core's axe.min.js: $AXE_CORE_JS, else where `make
// test-deps` installs it.
func axePath() string {
	if p := os.Getenv("AXE_CORE_JS"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "warden", "axe", "node_modules", "axe-core", "axe.min.js")
}

// axeViolation is one rule axe-core reports as violated.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// checkAccessible runs axe-core on the current page at 1280 and 390 px
// wide and fails on any serious or critical violation.
func checkAccessible(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	src, err := os.ReadFile(axePath())
	if err != nil {
		t.Fatalf("axe-core is needed at %s (make test-deps, or set AXE_CORE_JS): %v", axePath(), err)
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

// TestBrowserDecideFromEmail: an agent's call pauses, the e-mail arrives
// at the SMTP server, its link opens the approval page in Chromium, the
// approver approves (SQLite) or denies (Postgres) with a rationale, the
// tool runs once or never, the agent's long-poll returns Succeeded or
// Denied, the approver's inbox is empty and the audit log shows the
// decision and the rationale; every page passes axe-core.
func TestBrowserDecideFromEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend, decision, verdict, phase string
		runs                              int
	}{
		{"sqlite", "approve", "approved", "Succeeded", 1},
		{"postgres", "deny", "denied", "Denied", 0},
	} {
		t.Run(tc.backend+"/"+tc.decision, func(t *testing.T) {
			t.Parallel()
			browserFlow(t, backends()[tc.backend](t), tc.decision, tc.verdict, tc.phase, tc.runs)
		})
	}
}

func browserFlow(t *testing.T, storeURL, decision, verdict, phase string, runs int) {
	e := start(t, storeURL)
	cookie, _ := e.signIn("alice@example.com")
	ctx, problems := browser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	xpath := func(s string) chromedp.Search { return chromedp.Search(s) }

	// The agent's long-poll waits while a person decides.
	call := e.pause(99)
	polled := make(chan resp, 1)
	go func() { polled <- do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=60s", e.bot(), nil, nil) }()

	var link string
	for _, m := range e.smtp.Wait(t, 2, wait) {
		if m.To[0] == "alice@example.com" {
			text, _ := parts(t, m.Data)
			link = regexp.MustCompile(`http://console\.test(/approvals/link\?t=\S+)`).FindStringSubmatch(text)[1]
		}
	}
	require.NotEmpty(t, link)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.cpURL+link),
		chromedp.WaitVisible(css(`#rationale`)),
	), "open the link")
	body, err := chromedp.Run(ctx, chromedp.Text(css(`main`)))
	require.NoError(t, err)
	require.Contains(t, body, "payments.refund")
	require.Contains(t, body, `"amount": 99`)
	require.Equal(t, "pending", e.approvalStatus("ap-"+strings.TrimPrefix(call, "tc-")), "opening the link decided")
	checkAccessible(t, ctx, "the e-mail link's page")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(css(`#rationale`), "customer called, refund agreed"),
		chromedp.Click(css(`button[value=`+decision+`]`)),
		chromedp.WaitVisible(xpath(`//p[contains(., "Your decision is recorded: `+verdict+`")]`)),
	), decision)
	body, err = chromedp.Run(ctx, chromedp.Text(css(`main`)))
	require.NoError(t, err)
	require.Contains(t, body, "customer called, refund agreed")
	checkAccessible(t, ctx, "the decided link page")
	require.Contains(t, body, "alice@example.com")

	select {
	case r := <-polled:
		require.Equal(t, phase, r.phase(), string(r.raw))
	case <-time.After(wait):
		t.Fatal("the agent's long-poll did not return")
	}
	require.Len(t, e.ext.got("/refund"), runs, "the tool ran %d times", runs)
	require.Equal(t, []string{decision + " via email: customer called, refund agreed"}, e.decisionRecords("ap-"+strings.TrimPrefix(call, "tc-")))

	// Signed in, the approver's inbox is empty.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.SetCookie, network.SetCookieParams{Name: oidc.SessionCookie, Value: cookie, URL: e.cpURL})
			return err
		}),
		chromedp.Navigate(e.cpURL+"/"),
		// The live stream replaces the inbox once connected: read it after that.
		chromedp.WaitVisible(chromedp.Search(`//div[@id="inbox-live" and @data-updated]`)),
	), "inbox")
	inbox, err := chromedp.Run(ctx, chromedp.Text(css(`#inbox`)))
	require.NoError(t, err)
	require.Contains(t, inbox, "0 pending approvals")
	require.Contains(t, inbox, "Nothing waits for you")
	checkAccessible(t, ctx, "the inbox")
	ap := "ap-" + strings.TrimPrefix(call, "tc-")
	for _, path := range []string{"/approvals/default/" + ap, "/toolcalls", "/toolcalls/default/" + call, "/fleet/agents", "/fleet/agents/default/bot", "/no-such-page"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.cpURL+path), chromedp.WaitVisible(css(`main h1`))), path)
		checkAccessible(t, ctx, path)
	}
	csp, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || []`))
	require.NoError(t, err)
	require.Empty(t, csp)
	require.Empty(t, problems())
}
