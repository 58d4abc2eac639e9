package oidc

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/apierr"
)

// TestLocalLinkRefusesNonLoopback: a request that does not come from a
// loopback address is refused and leaves the link unspent; an expired link
// is refused.
func TestLocalLinkRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h, err := New(Config{RedirectURL: "http://127.0.0.1:8080/auth/callback"}, nil, func() time.Time { return now }, nil)
	require.NoError(t, err)
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		if e, ok := apierr.As(err); ok {
			return c.SendStatus(e.Status())
		}
		return c.SendStatus(http.StatusInternalServerError)
	}})
	app.Get(LocalLinkPath, h.LocalLink)

	token, err := h.IssueLocalLink("default", "owner@localhost")
	require.NoError(t, err)
	// app.Test's connection comes from 0.0.0.0, not a loopback address.
	res, err := app.Test(httptest.NewRequest(http.MethodGet, LocalLinkPath+"?token="+token, nil))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Len(t, h.locals.links, 1, "a refused request does not spend the link")
	// The token is kept hashed only.
	require.NotContains(t, string(h.locals.links[0].hash[:]), token)

	link, ok := h.locals.take(token, now.Add(LocalLinkTTL))
	require.False(t, ok, "expired at its TTL")
	require.Equal(t, "owner@localhost", link.email)
	_, ok = h.locals.take(token, now)
	require.False(t, ok, "taken once, gone")
}
