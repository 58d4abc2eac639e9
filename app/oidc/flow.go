package oidc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// FlowCookie carries a started sign-in (state, nonce, PKCE verifier) from
// /auth/login to /auth/callback. It is signed, HttpOnly, scoped to /auth and
// lives FlowTTL; the callback clears it, so each sign-in completes once.
const FlowCookie = "warden_oidc_flow"

// flow is the content of the flow cookie.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Issuer   string `json:"i"`
	Tenant   string `json:"t,omitempty"`
	Expires  int64  `json:"e"`
	// Signup is set when the flow signs a new tenant's owner up.
	Signup *SignupIntent `json:"u,omitempty"`
}

func (h *Handler) sign(payload string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("warden-oidc-flow\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *Handler) setFlow(c *fiber.Ctx, f flow) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	c.Cookie(&fiber.Cookie{Name: FlowCookie, Value: payload + "." + h.sign(payload), Path: "/auth",
		Expires: time.Unix(f.Expires, 0), HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
	return nil
}

func (h *Handler) clearFlow(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: FlowCookie, Value: "", Path: "/auth", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
}

var errNoFlow = errors.New("no sign-in in progress")

// readFlow verifies and decodes the flow cookie.
func (h *Handler) readFlow(c *fiber.Ctx) (flow, error) {
	v := c.Cookies(FlowCookie)
	payload, sig, ok := strings.Cut(v, ".")
	if v == "" || !ok || !hmac.Equal([]byte(sig), []byte(h.sign(payload))) {
		return flow{}, errNoFlow
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return flow{}, errNoFlow
	}
	var f flow
	if err := json.Unmarshal(b, &f); err != nil {
		return flow{}, errNoFlow
	}
	if !h.now().Before(time.Unix(f.Expires, 0)) {
		return flow{}, errors.New("the sign-in took too long")
	}
	return f, nil
}
