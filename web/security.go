package web

import "github.com/gofiber/fiber/v2"

// ContentSecurityPolicy allows only Warden's own scripts, styles and
// images, no framing, no <base> and form posts only to Warden itself.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// SecurityHeaders sets the console's security headers on every response.
func SecurityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", ContentSecurityPolicy)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	return c.Next()
}
