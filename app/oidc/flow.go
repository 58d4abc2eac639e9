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

// setSigned stores v as JSON in the /auth cookie name, signed with sign,
// until expires.
func (h *Handler) setSigned(c *fiber.Ctx, name string, sign func(string) string, v any, expires int64) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	c.Cookie(&fiber.Cookie{Name: name, Value: payload + "." + sign(payload), Path: "/auth",
		Expires: time.Unix(expires, 0), HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
	return nil
}

// clearSigned removes the /auth cookie name.
func (h *Handler) clearSigned(c *fiber.Ctx, name string) {
	c.Cookie(&fiber.Cookie{Name: name, Value: "", Path: "/auth", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, Secure: h.secure(c), SameSite: fiber.CookieSameSiteLaxMode})
}

// readSigned verifies the /auth cookie name against sign and decodes its
// JSON into v; false for a missing, forged or malformed cookie.
func readSigned(c *fiber.Ctx, name string, sign func(string) string, v any) bool {
	payload, sig, ok := strings.Cut(c.Cookies(name), ".")
	if payload == "" || !ok || !hmac.Equal([]byte(sig), []byte(sign(payload))) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && json.Unmarshal(b, v) == nil
}

func (h *Handler) setFlow(c *fiber.Ctx, f flow) error {
	return h.setSigned(c, FlowCookie, h.sign, f, f.Expires)
}

func (h *Handler) clearFlow(c *fiber.Ctx) { h.clearSigned(c, FlowCookie) }

var errNoFlow = errors.New("no sign-in in progress")

// readFlow verifies and decodes the flow cookie.
func (h *Handler) readFlow(c *fiber.Ctx) (flow, error) {
	var f flow
	if !readSigned(c, FlowCookie, h.sign, &f) {
		return flow{}, errNoFlow
	}
	if !h.now().Before(time.Unix(f.Expires, 0)) {
		return flow{}, errors.New("the sign-in took too long")
	}
	return f, nil
}
