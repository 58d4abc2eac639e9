package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/web"
)

func sameOriginApp() *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		return c.Status(http.StatusForbidden).SendString(err.Error())
	}})
	app.All("/form", web.SameOrigin, func(c *fiber.Ctx) error { return c.SendString("done") })
	return app
}

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	app := sameOriginApp()
	cases := []struct {
		name, method, origin, referer string
		status                        int
	}{
		{"same origin", http.MethodPost, "http://warden.test", "", http.StatusOK},
		{"same host, other scheme (TLS ended in front)", http.MethodPost, "https://warden.test", "", http.StatusOK},
		{"another site", http.MethodPost, "https://evil.test", "", http.StatusForbidden},
		{"another port", http.MethodPost, "http://warden.test:8443", "", http.StatusForbidden},
		{"opaque origin", http.MethodPost, "null", "", http.StatusForbidden},
		{"referer of another site", http.MethodPost, "", "https://evil.test/page", http.StatusForbidden},
		{"referer of its own page", http.MethodPost, "", "http://warden.test/signup", http.StatusOK},
		{"neither (not a browser)", http.MethodPost, "", "", http.StatusOK},
		{"a read is never refused", http.MethodGet, "https://evil.test", "", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, "http://warden.test/form", nil)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.referer != "" {
				req.Header.Set("Referer", tc.referer)
			}
			res, err := app.Test(req)
			require.NoError(t, err)
			require.Equal(t, tc.status, res.StatusCode)
		})
	}
}

func TestFormValueIgnoresTheQuery(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	app.Post("/f", func(c *fiber.Ctx) error { return c.SendString("[" + web.FormValue(c, "csrf_token") + "]") })
	for body, want := range map[string]string{"": "[]", "csrf_token=b": "[b]"} {
		req := httptest.NewRequest(http.MethodPost, "/f?csrf_token=q", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := app.Test(req)
		require.NoError(t, err)
		b := make([]byte, 16)
		n, _ := res.Body.Read(b)
		require.Equal(t, want, string(b[:n]))
	}
}

func FuzzSameOrigin(f *testing.F) {
	for _, s := range []string{"http://warden.test", "https://evil.test", "null", "", "http://[::1", "//warden.test", "http://warden.test@evil.test"} {
		f.Add(s)
	}
	app := sameOriginApp()
	f.Fuzz(func(t *testing.T, origin string) {
		req := httptest.NewRequest(http.MethodPost, "http://warden.test/form", nil)
		req.Header["Origin"] = []string{origin}
		res, err := app.Test(req)
		if err != nil {
			return // not a request the transport would carry
		}
		if res.StatusCode == http.StatusOK && origin != "" && !strings.Contains(strings.ToLower(origin), "warden.test") {
			t.Fatalf("origin %q was let through", origin)
		}
	})
}
