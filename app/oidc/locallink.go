package oidc

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
)

// LocalLinkPath is the route of a one-time local sign-in link:
// GET /auth/local?token=….
const LocalLinkPath = "/auth/local"

// LocalLinkTTL is how long a local sign-in link stays valid.
const LocalLinkTTL = 10 * time.Minute

// localLinks holds the outstanding one-time sign-in links of local mode,
// by the SHA-256 of their token; the token itself is never kept. They live
// in the process that printed them (local mode is one process), so a
// restart voids them.
type localLinks struct {
	mu    sync.Mutex
	links []localLink
}

type localLink struct {
	hash    [sha256.Size]byte
	tenant  string
	email   string
	expires time.Time
}

// IssueLocalLink returns a fresh one-time token that signs its user in as
// email in tenant, from the machine Warden runs on, within LocalLinkTTL.
// The person must be a member of the tenant (the caller makes sure). Build
// the link as <control plane URL>LocalLinkPath?token=<token>.
func (h *Handler) IssueLocalLink(tenant, email string) (string, error) {
	token, err := randomToken()
	if err != nil {
		return "", err
	}
	now := h.now()
	h.locals.mu.Lock()
	defer h.locals.mu.Unlock()
	live := h.locals.links[:0]
	for _, l := range h.locals.links {
		if now.Before(l.expires) {
			live = append(live, l)
		}
	}
	h.locals.links = append(live, localLink{hash: sha256.Sum256([]byte(token)), tenant: tenant, email: email, expires: now.Add(LocalLinkTTL)})
	return token, nil
}

// take finds the link of token, removes it (a link works once) and
// reports whether it was found and unexpired. Every outstanding link is
// compared in constant time.
func (l *localLinks) take(token string, now time.Time) (localLink, bool) {
	sum := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	found := -1
	for i := range l.links {
		if subtle.ConstantTimeCompare(sum[:], l.links[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return localLink{}, false
	}
	link := l.links[found]
	l.links = append(l.links[:found], l.links[found+1:]...)
	return link, now.Before(link.expires)
}

// LocalLink serves GET /auth/local?token=…: from a loopback address only,
// it spends a link IssueLocalLink made, starts a console session as the
// link's person and redirects to the console. A used, expired or unknown
// token is 401; a request from another address is 403 and leaves the link
// unspent.
func (h *Handler) LocalLink(c *fiber.Ctx) error {
	// The TCP peer, never a forwarded-for header: the link is for the
	// person at this machine.
	if ip := net.IP(c.Context().RemoteIP()); ip == nil || !ip.IsLoopback() {
		return apierr.New(apierr.CodeForbidden, "the local sign-in link works only from the machine Warden runs on")
	}
	token := c.Query("token")
	if token == "" {
		return unauthenticated("the sign-in link has no token: use the link `warden up` printed")
	}
	if err := h.limit(c, "local:loopback"); err != nil {
		return err
	}
	link, ok := h.locals.take(token, h.now())
	if !ok {
		return unauthenticated("this sign-in link is unknown, used or expired: restart `warden up` for a new one")
	}
	if err := h.startSession(c, link.tenant, link.email); err != nil {
		return fmt.Errorf("local sign-in: %w", err)
	}
	h.log.InfoContext(c.UserContext(), "local sign-in", "tenant", link.tenant, "email", link.email)
	h.auditSignin(c.UserContext(), audit.Record{Tenant: link.tenant, Actor: "user:" + link.email, Outcome: audit.OutcomeAllowed,
		Policy: "local", Reason: "signed in with a one-time local link"})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Redirect(h.cfg.AfterLogin, fiber.StatusSeeOther)
}
