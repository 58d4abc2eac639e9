package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
)

// ContentSecurityPolicy allows only Warden's own scripts, styles and
// images, no framing, no <base> and form posts only to Warden itself.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// FormActionPolicy is ContentSecurityPolicy with form posts allowed to
// lead to origins too: the sign-up form's post is answered with a
// redirect to the identity provider, and browsers apply form-action to
// every redirect of a form's submission.
func FormActionPolicy(origins []string) string {
	if len(origins) == 0 {
		return ContentSecurityPolicy
	}
	return ContentSecurityPolicy + " " + strings.Join(origins, " ")
}

// SecurityHeaders sets the console's security headers on every response.
func SecurityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", ContentSecurityPolicy)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	return c.Next()
}

// FormCookie holds the double-submit token of forms posted without a
// session (sign-up): the page carries the same token in its hidden field.
const FormCookie = "warden_form_csrf"

// localFormToken is the fiber local holding the request's anonymous form
// token, which the page's hidden field renders.
const localFormToken = "warden.formToken"

// SameOrigin refuses, with 403 Forbidden, a request other than GET, HEAD
// and OPTIONS whose Origin (or, without one, Referer) names another host
// than the one it was sent to: a form posted from another site. Requests
// naming neither (non-browser clients) pass; the CSRF token still guards
// them.
func SameOrigin(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	from := c.Get(fiber.HeaderOrigin)
	if from == "" {
		from = c.Get(fiber.HeaderReferer)
	}
	if from == "" {
		return c.Next()
	}
	u, err := url.Parse(from)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, string(c.Request().Host())) {
		return apierr.New(apierr.CodeForbidden, "the form was posted from another site (%s): open Warden's own page and try again", originOf(from))
	}
	return c.Next()
}

// originOf shortens an Origin or Referer to scheme://host for a message.
func originOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return "an invalid origin"
}

// FormValue returns a field of the request body (URL-encoded or
// multipart), never of the query string: a token in a URL leaks through
// logs, history and Referer.
func FormValue(c *fiber.Ctx, name string) string {
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

// issueFormToken gives a page for people without a session its form token
// (a cookie and the page's hidden field); with a session, the session's
// CSRF token serves.
func (cs *Console) issueFormToken(c *fiber.Ctx) error {
	if cs.deps.CSRFToken(c) != "" {
		return c.Next()
	}
	token := c.Cookies(FormCookie)
	if len(token) != 43 {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token = base64.RawURLEncoding.EncodeToString(b)
	} else {
		token = strings.Clone(token)
	}
	c.Cookie(&fiber.Cookie{Name: FormCookie, Value: token, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: c.Protocol() == "https" || cs.deps.SecureCookies})
	c.Locals(localFormToken, token)
	return c.Next()
}

// checkFormToken refuses, with 403 Forbidden, a form posted without a
// session whose hidden field does not repeat its form cookie. With a
// session, the session's CSRF check (mounted in front of the console)
// has decided.
func (cs *Console) checkFormToken(c *fiber.Ctx) error {
	if cs.deps.CSRFToken(c) != "" {
		return c.Next()
	}
	want := c.Cookies(FormCookie)
	got := c.Get(cs.deps.CSRFHeader)
	if got == "" {
		got = FormValue(c, cs.deps.CSRFField)
	}
	if want == "" || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return apierr.New(apierr.CodeForbidden, "missing or wrong CSRF token: reload the page and try again")
	}
	c.Locals(localFormToken, strings.Clone(want))
	return c.Next()
}

// csrfToken is the token a page's forms carry: the session's, else the
// anonymous form token.
func (cs *Console) csrfToken(c *fiber.Ctx) string {
	if t := cs.deps.CSRFToken(c); t != "" {
		return t
	}
	t, _ := c.Locals(localFormToken).(string)
	return t
}
