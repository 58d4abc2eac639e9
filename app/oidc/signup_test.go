package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
)

// startSignup posts the sign-up form for tenant and follows the redirect
// through the provider's login form as email.
func (b bundle) startSignup(t *testing.T, tenant, email string) started {
	t.Helper()
	form := url.Values{"tenant": {tenant}, "organization": {"Org " + tenant}, "name": {"Founder"}}
	req := httptest.NewRequest(http.MethodPost, "/signup", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := b.do(t, req)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body(t, resp))
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), b.issuer+"/"), resp.Header.Get("Location"))
	return b.authorizeFrom(t, resp, email)
}

// requireNoTenant checks that a refused sign-up created nothing.
func (b bundle) requireNoTenant(t *testing.T, tenant, email string) {
	t.Helper()
	_, err := b.st.TenantGet(b.ctx, tenant)
	require.ErrorIs(t, err, store.ErrNotFound, "tenant %q was created", tenant)
	ms, err := b.st.MembershipsByEmail(b.ctx, email)
	require.NoError(t, err)
	for _, m := range ms {
		require.NotEqual(t, tenant, m.Tenant)
	}
}

// TestSignupProvesTheOwnersEmail: the sign-up form sends the person to the
// provider, and the tenant is created when they come back, with the
// address the provider verified as its owner's, who is then signed in.
func TestSignupProvesTheOwnersEmail(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, storeURL string) {
		b := setupOn(t, storeURL)
		s := b.startSignup(t, "startup", "founder@startup.example")
		b.requireNoTenant(t, "startup", "founder@startup.example") // nothing before the provider's proof
		resp := b.callback(t, s)
		require.Equal(t, http.StatusFound, resp.StatusCode, body(t, resp))
		require.Equal(t, SignupAfter, resp.Header.Get("Location"))
		session := cookieOf(resp, SessionCookie)
		require.NotNil(t, session)

		status, p, _ := b.whoami(t, session)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, auth.Principal{Tenant: "startup", Subject: "user:founder@startup.example", Role: auth.RoleOwner,
			Namespace: auth.AllNamespaces, Kind: auth.KindUser, Email: "founder@startup.example"}, p)
		rec, err := b.st.TenantGet(b.ctx, "startup")
		require.NoError(t, err)
		require.Equal(t, "Org startup", rec.DisplayName)
		var verbs []string
		require.NoError(t, b.st.View(b.ctx, "startup", func(ctx context.Context, r store.Reader) error {
			recs, err := r.AuditList(ctx, store.AuditListParams{Limit: 10})
			for _, a := range recs {
				verbs = append(verbs, a.Verb+" "+a.Actor+" "+a.Reason)
			}
			return err
		}))
		require.Contains(t, strings.Join(verbs, "\n"), "signup user:founder@startup.example signed up; founder@startup.example verified by "+b.issuer)
	})
}

// TestSignupRefusals: a sign-up whose address the provider has not
// verified, whose flow cookie was tampered with, that took too long, that
// is replayed, or whose tenant id was taken meanwhile creates nothing.
func TestSignupRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("unverified e-mail", func(t *testing.T) {
		resp := b.callback(t, b.startSignup(t, "unverified-co", "unverified@startup.example"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		code, msg := errCode(t, resp)
		require.Equal(t, "Forbidden", code)
		require.Contains(t, msg, "has not verified unverified@startup.example")
		require.Nil(t, cookieOf(resp, SessionCookie))
		b.requireNoTenant(t, "unverified-co", "unverified@startup.example")
	})
	t.Run("tampered intent", func(t *testing.T) {
		s := b.startSignup(t, "honest-co", "founder@startup.example")
		f, sig := flowOf(t, s.flow)
		require.NotNil(t, f.Signup)
		f.Signup.Tenant = "hijacked-co"
		nb, _ := json.Marshal(f)
		s.flow = &http.Cookie{Name: FlowCookie, Value: base64.RawURLEncoding.EncodeToString(nb) + "." + sig}
		resp := b.callback(t, s)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "no sign-in in progress")
		b.requireNoTenant(t, "hijacked-co", "founder@startup.example")
		b.requireNoTenant(t, "honest-co", "founder@startup.example")
	})
	t.Run("expired", func(t *testing.T) {
		s := b.startSignup(t, "slow-co", "founder@startup.example")
		b.skew.Store(int64(11 * time.Minute)) // FlowTTL is 10m
		t.Cleanup(func() { b.skew.Store(0) })
		resp := b.callback(t, s)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "took too long")
		b.requireNoTenant(t, "slow-co", "founder@startup.example")
	})
	t.Run("replayed", func(t *testing.T) {
		b.skew.Store(0)
		s := b.startSignup(t, "once-co", "founder@startup.example")
		require.Equal(t, http.StatusFound, b.callback(t, s).StatusCode)
		before, err := b.st.MembershipsByEmail(b.ctx, "founder@startup.example")
		require.NoError(t, err)
		// The same callback, cookie and code again: the provider refuses
		// the used code; no session, nothing created.
		resp := b.callback(t, s)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Nil(t, cookieOf(resp, SessionCookie))
		after, err := b.st.MembershipsByEmail(b.ctx, "founder@startup.example")
		require.NoError(t, err)
		require.Equal(t, before, after)
	})
	t.Run("taken meanwhile", func(t *testing.T) {
		resp := b.callback(t, b.startSignup(t, "acme-two", "founder@startup.example"))
		require.Equal(t, http.StatusFound, resp.StatusCode)
		resp = b.callback(t, b.startSignup(t, "acme", "founder@startup.example"))
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		_, msg := errCode(t, resp)
		require.Contains(t, msg, "was taken meanwhile")
		require.Nil(t, cookieOf(resp, SessionCookie))
	})
}
