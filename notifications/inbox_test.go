package notifications_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"
)

// TestBrowserLiveInbox: the approver's inbox is open in Chromium; an
// agent's call pauses and its approval appears without a reload, and it
// leaves when it is decided through the API. A member who may not decide
// sees nothing, on the page and on the stream, while calls wait.
func TestBrowserLiveInbox(t *testing.T) {
	t.Parallel()
	e := start(t, backends()["sqlite"](t))
	alice, _ := e.signIn("alice@example.com")
	dave, _ := e.signIn("dave@example.com") // a member, no role
	ctx, problems := browser(t)
	css, xpath := func(s string) chromedp.CSS { return chromedp.CSS(s) }, func(s string) chromedp.Search { return chromedp.Search(s) }
	as := func(cookie string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.SetCookie, network.SetCookieParams{Name: oidc.SessionCookie, Value: cookie, URL: e.cpURL})
			return err
		})
	}
	inbox := func() string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(css(`#inbox`)))
		require.NoError(t, err)
		return s
	}

	require.NoError(t, chromedp.Do(ctx, as(alice), chromedp.Navigate(e.cpURL+"/approvals"),
		chromedp.WaitVisible(xpath(`//div[@id="inbox-live" and @data-updated]`))), "open the inbox")
	require.Contains(t, inbox(), "0 pending approvals")
	// A mark on the page: a reload would lose it.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument = true`))
	require.NoError(t, err)

	call := e.pause(42)
	ap := "ap-" + strings.TrimPrefix(call, "tc-")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(xpath(`//div[@id="inbox"]//a[contains(@href, "`+ap+`")]`))),
		"the paused call appears")
	require.Contains(t, inbox(), "1 pending approval")
	require.Contains(t, inbox(), "payments.refund")
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "the page was reloaded")
	checkAccessible(t, ctx, "the live inbox")

	r := do(t, http.MethodPost, e.cpURL+"/v1/approvals/"+ap+"/decide", e.admin, []byte(`{"decision":"deny","rationale":"not today"}`), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(xpath(`//div[@id="inbox"]//caption[contains(., "0 pending approvals")]`))),
		"the decided approval leaves")
	same, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "the page was reloaded")

	// Dave may not decide: a waiting call never reaches his inbox.
	waiting := e.pause(7)
	require.NoError(t, chromedp.Do(ctx, as(dave), chromedp.Navigate(e.cpURL+"/approvals"),
		chromedp.WaitVisible(xpath(`//div[@id="inbox-live" and @data-updated]`))), "dave's inbox")
	require.Contains(t, inbox(), "0 pending approvals")
	require.Contains(t, inbox(), "Nothing waits for you")
	events := streamEvents(t, e.cpURL, dave, 1)
	require.Contains(t, events[0], "0 pending approvals")
	require.NotContains(t, events[0], strings.TrimPrefix(waiting, "tc-"))
	require.Contains(t, streamEvents(t, e.cpURL, alice, 1)[0], strings.TrimPrefix(waiting, "tc-"), "alice's stream carries it")

	csp, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || []`))
	require.NoError(t, err)
	require.Empty(t, csp)
	require.Empty(t, problems())
}

// streamEvents reads the first n "inbox" events of GET /approvals/stream
// as cookie's person and returns their data.
func streamEvents(t *testing.T, base, cookie string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/approvals/stream", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: oidc.SessionCookie, Value: cookie})
	req.Header.Set("Last-Event-ID", "41")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
	var out []string
	var data []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			require.Equal(t, "id: 42", line, "the ids go on from Last-Event-ID")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case line == "" && data != nil:
			out = append(out, strings.Join(data, "\n"))
			data = nil
		}
	}
	require.Len(t, out, n, "events: %v", sc.Err())
	return out
}
