package notifications_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/oidc"

	"github.com/warden-dev/warden/notifications"
)

// TestEmailLink: the link opens the approval's page without deciding;
// a POST from the page decides as the recipient, once; a tampered,
// expired or non-member's link decides nothing and is audited.
func TestEmailLink(t *testing.T) {
	t.Parallel()
	for name, newURL := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := start(t, newURL(t))
			e.member("alice@example.com")
			call := e.pause(75)
			ap := "ap-" + strings.TrimPrefix(call, "tc-")
			links := map[string]string{}
			for _, m := range e.smtp.Wait(t, 2, wait) {
				text, _ := parts(t, m.Data)
				link := regexp.MustCompile(`http://console\.test(/approvals/link\?t=\S+)`).FindStringSubmatch(text)
				require.Len(t, link, 2)
				u, err := url.Parse(link[1])
				require.NoError(t, err)
				links[m.To[0]] = u.Query().Get("t")
			}
			alice := links["alice@example.com"]

			// GET shows the page and decides nothing, however often.
			for range 2 {
				r := e.page(http.MethodGet, "/approvals/link?t="+url.QueryEscape(alice), nil)
				require.Equal(t, http.StatusOK, r.status, string(r.raw))
				require.Equal(t, "no-store", r.header.Get("Cache-Control"))
				page := string(r.raw)
				require.Contains(t, page, "payments.refund")
				require.Contains(t, page, "&#34;amount&#34;: 75")
				require.Contains(t, page, `value="approve"`)
				require.Contains(t, page, "money@2")
			}
			require.Equal(t, "pending", e.approvalStatus(ap))

			// A tampered link: refused, audited.
			body, sig, _ := strings.Cut(alice, ".")
			tampered := body + "x." + sig
			r := e.page(http.MethodPost, "/approvals/link", url.Values{"t": {tampered}, "decision": {"approve"}})
			require.Equal(t, http.StatusForbidden, r.status)
			require.Contains(t, string(r.raw), "not valid")
			// An expired one.
			c, err := notifications.ParseLink(e.linkKy, alice, time.Now())
			require.NoError(t, err)
			c.Expires = time.Now().Add(-time.Minute).Unix()
			r = e.page(http.MethodPost, "/approvals/link", url.Values{"t": {notifications.SignLink(e.linkKy, c)}, "decision": {"approve"}})
			require.Equal(t, http.StatusGone, r.status)
			// bob is not a member.
			r = e.page(http.MethodPost, "/approvals/link", url.Values{"t": {links["bob@example.com"]}, "decision": {"approve"}})
			require.Equal(t, http.StatusForbidden, r.status, string(r.raw))
			require.Equal(t, "pending", e.approvalStatus(ap))

			// alice approves with a rationale; the tool runs once.
			r = e.page(http.MethodPost, "/approvals/link", url.Values{"t": {alice}, "decision": {"approve"}, "rationale": {"refund agreed on the phone"}})
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			require.Contains(t, string(r.raw), "Your decision is recorded: approved")
			final := do(t, http.MethodGet, e.gwURL+"/v1/tool-calls/"+call+"?wait=15s", e.bot(), nil, nil)
			require.Equal(t, "Succeeded", final.str("status", "phase"), string(final.raw))
			require.Len(t, e.ext.got("/refund"), 1)

			// The link decides once.
			r = e.page(http.MethodPost, "/approvals/link", url.Values{"t": {alice}, "decision": {"deny"}})
			require.Equal(t, http.StatusConflict, r.status)
			require.Contains(t, string(r.raw), "alice@example.com")
			require.Len(t, e.ext.got("/refund"), 1)
			r = e.page(http.MethodGet, "/approvals/link?t="+url.QueryEscape(alice), nil)
			require.Contains(t, string(r.raw), "refund agreed on the phone")
			require.NotContains(t, string(r.raw), `value="approve"`)

			audit := string(do(t, http.MethodGet, e.cpURL+"/v1/audit?limit=1000", e.admin, nil, nil).raw)
			require.Contains(t, audit, "approve via email: refund agreed on the phone")
			require.Contains(t, audit, "e-mail link refused")
			require.Contains(t, audit, "bob@example.com is not a member")
		})
	}
}

type pageResp struct {
	status int
	header http.Header
	raw    []byte
}

// page requests a console page; form is posted form-encoded.
func (e *env) page(method, path string, form url.Values) pageResp {
	e.t.Helper()
	return e.pageAs("", method, path, form)
}

// pageAs requests a console page with a session cookie (none when empty),
// not following redirects.
func (e *env) pageAs(cookie, method, path string, form url.Values) pageResp {
	e.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, e.cpURL+path, body)
	require.NoError(e.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: oidc.SessionCookie, Value: cookie})
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = res.Body.Close() }()
	raw := new(strings.Builder)
	_, _ = io.Copy(raw, res.Body)
	return pageResp{status: res.StatusCode, header: res.Header, raw: []byte(raw.String())}
}
