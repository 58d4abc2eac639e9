package oidc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/store"
)

// SessionCookie holds a console session id: 32 random bytes, base64url. The
// store keeps only its SHA-256.
const SessionCookie = "warden_session"

// CSRFHeader and CSRFField carry the session's CSRF token on every non-GET
// request: HTMX sends the header (hx-headers), plain forms the field.
const (
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf_token"
)

// Fiber locals set by SessionAuth.
const (
	localSession   = "warden.oidc.session"
	localPrincipal = "warden.oidc.principal"
)

func hashSessionID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// startSession stores a new session and sets its cookie.
func (h *Handler) startSession(c *fiber.Ctx, tenant, email string) error {
	id, err := randomToken()
	if err != nil {
		return err
	}
	csrf, err := randomToken()
	if err != nil {
		return err
	}
	now := h.now().UTC()
	s := store.Session{IDHash: hashSessionID(id), Tenant: tenant, Email: email, CSRFToken: csrf, CreatedAt: now, ExpiresAt: now.Add(h.cfg.SessionTTL)}
	if err := h.st.SessionInsert(c.UserContext(), s); err != nil {
		return fmt.Errorf("store session: %w", err)
	}
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: id, Path: "/", Expires: s.ExpiresAt,
		HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
	return nil
}

func (h *Handler) clearSessionCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: "", Path: "/", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
}

// session resolves the request's session cookie (once per request).
func (h *Handler) session(c *fiber.Ctx) (*store.Session, error) {
	if s, ok := c.Locals(localSession).(*store.Session); ok {
		return s, nil
	}
	id := c.Cookies(SessionCookie)
	if id == "" {
		return nil, unauthenticated("sign in first: no session")
	}
	s, err := h.st.SessionGet(c.UserContext(), hashSessionID(id), h.now())
	if isNotFound(err) {
		h.clearSessionCookie(c)
		return nil, unauthenticated("your session has expired or was signed out: sign in again")
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	c.Locals(localSession, s)
	return s, nil
}

// principalFor returns the principal of a person in a tenant, re-reading
// the membership so that a removed member loses access at once. Its Role
// (owner for owners, else viewer) is descriptive only: app/authz never
// trusts a role carried on a person's principal and decides from
// ownership and the RoleBindings of Subject "user:<email>".
func (h *Handler) principalFor(ctx context.Context, tenant, email string) (auth.Principal, error) {
	var m *store.Member
	err := h.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
		var err error
		m, err = r.MemberGet(ctx, email)
		return err
	})
	if isNotFound(err) {
		return auth.Principal{}, fmt.Errorf("%w: %s is no longer a member of tenant %q", auth.ErrUnauthenticated, email, tenant)
	}
	if err != nil {
		return auth.Principal{}, fmt.Errorf("read membership: %w", err)
	}
	p := auth.Principal{Tenant: tenant, Subject: "user:" + email, Kind: auth.KindUser, Email: email,
		Role: auth.RoleViewer, Namespace: auth.AllNamespaces}
	if m.Owner {
		p.Role = auth.RoleOwner
	}
	return p, nil
}

// SessionAuth is middleware for console routes: it resolves the session
// cookie to the person's auth.Principal, puts it into the request context
// (auth.PrincipalFrom) and answers 401 Unauthenticated without a valid
// session. Mount CSRF after it.
func (h *Handler) SessionAuth(c *fiber.Ctx) error {
	p, err := h.SessionPrincipal(c)
	if err != nil {
		return err
	}
	c.SetUserContext(auth.WithPrincipal(c.UserContext(), p))
	return c.Next()
}

// SessionPrincipal resolves the request's session cookie to the person's
// principal without continuing the chain, for an API authenticator that
// accepts console sessions next to bearer tokens (it must then apply CSRF
// too). Errors are *apierr.Error Unauthenticated.
func (h *Handler) SessionPrincipal(c *fiber.Ctx) (auth.Principal, error) {
	if p, ok := PrincipalOf(c); ok {
		return p, nil
	}
	s, err := h.session(c)
	if err != nil {
		return auth.Principal{}, err
	}
	p, err := h.principalFor(c.UserContext(), s.Tenant, s.Email)
	if errors.Is(err, auth.ErrUnauthenticated) {
		_ = h.st.SessionDelete(c.UserContext(), s.IDHash)
		h.clearSessionCookie(c)
		return auth.Principal{}, unauthenticated("you are no longer a member of tenant %q: sign in again", s.Tenant)
	}
	if err != nil {
		return auth.Principal{}, err
	}
	c.Locals(localPrincipal, p)
	return p, nil
}

// PrincipalOf returns the principal SessionAuth resolved for this request.
func PrincipalOf(c *fiber.Ctx) (auth.Principal, bool) {
	p, ok := c.Locals(localPrincipal).(auth.Principal)
	return p, ok
}

// CSRFToken returns the session's CSRF token for templates (a hidden
// csrf_token field, or hx-headers='{"X-CSRF-Token": "…"}'); "" without a
// session.
func CSRFToken(c *fiber.Ctx) string {
	if s, ok := c.Locals(localSession).(*store.Session); ok {
		return s.CSRFToken
	}
	return ""
}

// CSRF is middleware that refuses, with 403 Forbidden, every request other
// than GET, HEAD and OPTIONS that carries the session cookie but not the
// session's CSRF token in the X-CSRF-Token header or the csrf_token form
// field. Requests without the session cookie (API calls with a bearer
// token) carry no ambient credential to forge and pass through.
func (h *Handler) CSRF(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if c.Cookies(SessionCookie) == "" {
		return c.Next()
	}
	s, err := h.session(c)
	if err != nil {
		return err
	}
	if err := checkCSRF(c, s); err != nil {
		return err
	}
	return c.Next()
}

func checkCSRF(c *fiber.Ctx, s *store.Session) error {
	got := c.Get(CSRFHeader)
	if got == "" {
		got = formValue(c, CSRFField)
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRFToken)) != 1 {
		return apierr.New(apierr.CodeForbidden, "missing or wrong CSRF token: reload the page and try again")
	}
	return nil
}

// Logout ends the session: POST /auth/logout with the CSRF token. It
// deletes the session, clears the cookie and redirects (303) to "/".
func (h *Handler) Logout(c *fiber.Ctx) error {
	s, err := h.session(c)
	if err != nil {
		return err
	}
	if err := checkCSRF(c, s); err != nil {
		return err
	}
	if err := h.st.SessionDelete(c.UserContext(), s.IDHash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	h.clearSessionCookie(c)
	return c.Redirect("/", fiber.StatusSeeOther)
}

// secure reports whether cookies get the Secure attribute: when configured,
// or when this request arrived over TLS.
func (h *Handler) secure(c *fiber.Ctx) bool {
	return h.cfg.CookieSecure || c.Protocol() == "https"
}

// formValue returns a field of the request body (URL-encoded or
// multipart), never of the query string, where a token would leak through
// logs, history and Referer.
func formValue(c *fiber.Ctx, name string) string {
	if v := c.Request().PostArgs().Peek(name); len(v) > 0 {
		return string(v)
	}
	if mf, err := c.MultipartForm(); err == nil {
		if vs := mf.Value[name]; len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}
