// Package oidctest runs a real OpenID Provider (zitadel/oidc's example
// provider) for tests, and signs people in at it the way a browser would,
// to obtain the ID tokens it issues. Only tests import it.
package oidctest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	opstorage "github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/text/language"
)

// Password is the password of every user of a test provider.
const Password = "verysecure"

// The provider's one client: Warden.
const (
	ClientID     = "warden"
	ClientSecret = "secret"
)

// exampleMu serializes the tests of one process that run a provider:
// zitadel's example provider writes package-level endpoint settings when
// it is set up and reads them while it serves, so two at once race. It
// guards that third-party state, which is why it is a package variable.
var exampleMu sync.Mutex

// User is a person the provider knows; the username is the e-mail
// address and the password is Password.
type User struct {
	Email string
	// Unverified makes the provider say the address is not verified.
	Unverified bool
	// FamilyName is the family_name claim ("User" when empty).
	FamilyName string
}

// Handler returns a provider serving at issuer with the given users and
// one client, ClientID, that may redirect to redirect. Two providers of
// one process must not serve at once (see Provider, which sees to it).
func Handler(issuer, redirect string, people ...User) http.Handler {
	users := users{}
	for i, u := range people {
		id := fmt.Sprintf("u%d", i+1)
		family := u.FamilyName
		if family == "" {
			family = "User"
		}
		users[id] = &opstorage.User{ID: id, Username: u.Email, Password: Password, FirstName: "Test", LastName: family,
			Email: u.Email, EmailVerified: !u.Unverified, PreferredLanguage: language.English}
	}
	clients := map[string]*opstorage.Client{ClientID: opstorage.WebClient(ClientID, ClientSecret, redirect)}
	return exampleop.SetupServer(issuer, claims{opstorage.NewStorageWithClients(users, clients)}, nil, false)
}

// Provider starts a provider whose users are the given e-mail addresses
// (verified) and whose one client, ClientID, may redirect to redirect. It
// returns the issuer URL. The provider stops, and the next test of the
// process may start one, when t ends.
func Provider(t *testing.T, redirect string, emails ...string) string {
	t.Helper()
	exampleMu.Lock()
	t.Cleanup(exampleMu.Unlock)
	people := make([]User, len(emails))
	for i, e := range emails {
		people[i] = User{Email: e}
	}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	handler = Handler(srv.URL, redirect, people...)
	return srv.URL
}

// IDToken signs email in at the provider outside Warden (code flow with
// PKCE, as a client of its own) and returns the ID token it issued to
// ClientID.
func IDToken(t *testing.T, issuer, redirect, email string) string {
	t.Helper()
	ctx := context.Background()
	party, err := rp.NewRelyingPartyOIDC(ctx, issuer, ClientID, ClientSecret, redirect, []string{"openid", "email", "profile"})
	require.NoError(t, err)
	verifier := oauth2.GenerateVerifier()
	authURL := party.OAuthConfig().AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier))
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res := SignIn(t, client, issuer, authURL, email)
	cb, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	tok, err := party.OAuthConfig().Exchange(ctx, cb.Query().Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	raw, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, raw)
	return raw
}

// SignIn opens authURL, an authorization request of the code flow, at the
// provider with client (which must not follow the redirect to the client's
// redirect URL), signs email in on the login form and returns the
// provider's answer: normally a redirect carrying the code.
func SignIn(t *testing.T, client *http.Client, issuer, authURL, email string) *http.Response {
	t.Helper()
	page, err := client.Get(authURL)
	require.NoError(t, err)
	_ = page.Body.Close()
	id := page.Request.URL.Query().Get("authRequestID")
	require.NotEmpty(t, id, "the provider should show its login form, got %s", page.Request.URL)
	res, err := client.PostForm(issuer+"/login/username", url.Values{"id": {id}, "username": {email}, "password": {Password}})
	require.NoError(t, err)
	_ = res.Body.Close()
	return res
}

// users is the provider's user directory.
type users map[string]*opstorage.User

func (u users) GetUserByID(id string) *opstorage.User { return u[id] }
func (u users) GetUserByUsername(name string) *opstorage.User {
	for _, x := range u {
		if x.Username == name {
			return x
		}
	}
	return nil
}
func (u users) ExampleClientID() string { return opstorage.ServiceUserID }

// claims makes the example provider put e-mail into ID tokens, as real
// providers do.
type claims struct{ *opstorage.Storage }

type assertingClient struct{ op.Client }

func (assertingClient) IDTokenUserinfoClaimsAssertion() bool { return true }

func (s claims) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return assertingClient{c}, nil
}
