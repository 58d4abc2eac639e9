package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
)

// TestLocalSignInLink: in local mode the link `warden up` prints signs the
// person at the machine in as the local owner, once.
func TestLocalSignInLink(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, func(c *server.Config) { c.LocalSignIn = true })
	link, err := b.srv.LocalSignInLink(context.Background(), "")
	require.NoError(t, err)
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, oidc.LocalLinkPath, u.Path)
	require.Equal(t, strings.TrimPrefix(b.url, "http://"), u.Host)
	path := u.Path + "?" + u.RawQuery

	// Without the link the console still explains local mode.
	r := b.page(t, http.MethodGet, "/signin", "", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), "one-time sign-in link")
	require.Contains(t, string(r.body), "warden get agents\nwarden apply -f examples/fleet/\n", "one command a line")

	// Used once: a session as the local owner.
	r = b.page(t, http.MethodGet, path, "", nil, nil)
	require.Equal(t, http.StatusSeeOther, r.status, string(r.body))
	require.Equal(t, "/", r.header.Get("Location"))
	var session string
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == oidc.SessionCookie {
			session = c.Value
			require.True(t, c.HttpOnly)
		}
	}
	require.NotEmpty(t, session)
	r = b.page(t, http.MethodGet, "/members", session, nil, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), server.LocalOwnerEmail)
	require.Contains(t, string(r.body), "Invite", "the local owner may manage members")
	var signins []audit.Record
	require.NoError(t, b.store.View(context.Background(), server.LocalTenant, func(ctx context.Context, rd store.Reader) error {
		var err error
		signins, err = rd.AuditList(ctx, store.AuditListParams{Verb: "signin", Limit: 10})
		return err
	}))
	require.Len(t, signins, 1, "the local sign-in is audited")
	require.Equal(t, "user:"+server.LocalOwnerEmail, signins[0].Actor)
	require.Equal(t, audit.OutcomeAllowed, signins[0].Outcome)

	// Twice: refused.
	r = b.page(t, http.MethodGet, path, "", nil, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, string(r.body))
	// A made-up token: refused.
	r = b.page(t, http.MethodGet, oidc.LocalLinkPath+"?token=nope", "", nil, nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
}

// TestNoLocalSignInWithoutTheOption: without LocalSignIn there is no
// link route and no link.
func TestNoLocalSignInWithoutTheOption(t *testing.T) {
	t.Parallel()
	b := consoleSetup(t, nil)
	_, err := b.srv.LocalSignInLink(context.Background(), "")
	require.Error(t, err)
	r := b.page(t, http.MethodGet, oidc.LocalLinkPath+"?token=x", "", nil, nil)
	require.Equal(t, http.StatusNotFound, r.status)
}
