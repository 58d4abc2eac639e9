package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/store"
)

// LocalOwnerEmail is the member a local sign-in link signs in as: the
// owner of the local tenant, the person at the machine `warden up` runs on.
const LocalOwnerEmail = "owner@localhost"

// newLocalSignIn returns the session handler of local mode: no identity
// provider, only the one-time links of LocalSignInLink.
func newLocalSignIn(cfg Config) (*oidc.Handler, error) {
	h, err := oidc.New(oidc.Config{
		RedirectURL:  strings.TrimSuffix(cfg.PublicURL, "/") + "/auth/callback",
		CookieSecure: strings.HasPrefix(cfg.PublicURL, "https://"),
	}, cfg.Store, cfg.Now, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("local sign-in: %w", err)
	}
	return h, nil
}

// LocalSignInLink makes the local tenant's owner member (LocalOwnerEmail)
// if it is missing and returns a one-time console sign-in link for it on
// base, the control plane's URL as the machine itself reaches it ("" for
// Config.PublicURL): valid for oidc.LocalLinkTTL, once, and only from a
// loopback address. It needs Config.LocalSignIn.
func (s *Server) LocalSignInLink(ctx context.Context, base string) (string, error) {
	if s.oidc == nil || s.cfg.OIDC != nil {
		return "", errors.New("local sign-in links need Config.LocalSignIn and no OIDC")
	}
	err := s.store.Update(ctx, LocalTenant, func(ctx context.Context, tx store.Tx) error {
		m, err := tx.MemberGet(ctx, LocalOwnerEmail)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case m.Owner && m.Status == store.MemberActive:
			return nil
		}
		return tx.MemberUpsert(ctx, store.Member{Tenant: LocalTenant, Email: LocalOwnerEmail, Name: "Local owner", Owner: true,
			Status: store.MemberActive, InvitedBy: "warden up", CreatedAt: s.now().UTC()})
	})
	if err != nil {
		return "", fmt.Errorf("local owner: %w", err)
	}
	// Members have no resourceVersion: the new owner needs a fresh
	// enforcer.
	s.authz.Invalidate(LocalTenant)
	token, err := s.oidc.IssueLocalLink(LocalTenant, LocalOwnerEmail)
	if err != nil {
		return "", err
	}
	if base == "" {
		base = s.cfg.PublicURL
	}
	return strings.TrimSuffix(base, "/") + oidc.LocalLinkPath + "?token=" + url.QueryEscape(token), nil
}
