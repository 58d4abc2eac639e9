package server

import (
	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/workload"
)

// methodWatch is the WATCH method SPEC.md names for the change feed.
const methodWatch = "WATCH"

func (s *Server) routes() *fiber.App {
	app := fiber.New(s.cfg.Timeouts.FiberConfig(fiber.Config{
		AppName: "warden",
		// The transport's hard cap sits above MaxBodyBytes so that a body a
		// little over the limit is read and answered with a clean 413 in the
		// documented shape (limitBody) instead of a reset connection.
		BodyLimit:             hardBodyLimit,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		JSONEncoder:           resource.MarshalValue,
		RequestMethods:        append(append([]string{}, fiber.DefaultMethods...), methodWatch),
		// Timeouts (listener.Timeouts) bound reading a request only: no
		// write deadline is set, so a watch stream and a long-poll last
		// as long as they need.
	}))
	s.cfg.Timeouts.Harden(app)
	app.Use(listener.RequestID, listener.Recover(s.log), limitBody)
	app.Use("/v1", listener.APIHeaders)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	// Public: every service verifies workload tokens with these keys, and
	// agents exchange their credential (in the body) for a token.
	app.Get(workload.JWKSPath, s.issuer.JWKSHandler())
	app.Post("/v1/auth/token", s.exchange.TokenHandler())
	if s.cfg.PublicRoutes != nil {
		s.cfg.PublicRoutes(app)
	}

	v1 := app.Group("/v1", s.authenticate, s.audit)
	v1.Post("/resources/apply", s.handleApply)
	v1.Post("/resources/validate", s.handleValidate)
	v1.Post("/resources/diff", s.handleDiff)
	v1.Get("/resources", s.handleWatch)
	v1.Add(methodWatch, "/resources", s.handleWatch)

	v1.Get("/audit", s.handleAuditList)
	v1.Get("/audit/verify", s.handleAuditVerify)
	s.apikeyRoutes(v1)
	s.memberRoutes(v1)
	s.approvalRoutes(v1)
	s.agbomRoutes(v1)
	s.executionRoutes(v1)

	v1.Get("/namespaces/:ns/:plural", s.handleList)
	v1.Get("/namespaces/:ns/:plural/:name", s.handleGet)
	v1.Patch("/namespaces/:ns/:plural/:name", s.handlePatch)
	v1.Delete("/namespaces/:ns/:plural/:name", s.handleDelete)
	v1.Put("/namespaces/:ns/:plural/:name/status", s.handlePutStatus)

	// Tenant-scope kinds: /v1/namespaces, /v1/tenants.
	v1.Get("/:plural", s.handleList)
	v1.Get("/:plural/:name", s.handleGet)
	v1.Patch("/:plural/:name", s.handlePatch)
	v1.Delete("/:plural/:name", s.handleDelete)
	v1.Put("/:plural/:name/status", s.handlePutStatus)

	s.consoleRoutes(app)
	app.Use(func(c *fiber.Ctx) error {
		return notFound("no route for %s %s", c.Method(), c.Path())
	})
	return app
}
