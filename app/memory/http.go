package memory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

const (
	localPrincipal = "warden.memory.principal"
	localAudit     = "warden.memory.audit"
)

// auditInfo is what a handler tells the audit record.
type auditInfo struct {
	verb, namespace, resource string
}

// App returns the memory service's HTTP application (port 8084).
func (s *Service) App() *fiber.App {
	app := fiber.New(s.cfg.Timeouts.FiberConfig(fiber.Config{
		AppName: "warden-memory",
		// Twice the limit: a body between the two gets the documented
		// 413 body from limitBody; fasthttp refuses larger ones itself.
		BodyLimit:             2 * s.cfg.MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		JSONEncoder:           resource.MarshalValue,
	}))
	s.cfg.Timeouts.Harden(app)
	app.Use(listener.RequestID, listener.Recover(s.cfg.Logger), s.limitBody)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	v1 := app.Group("/v1/memory", listener.APIHeaders, s.authenticate, s.audit)
	v1.Post("/write", s.handleWrite)
	v1.Post("/query", s.handleQuery)
	v1.Post("/:name/write", s.handleWrite)
	v1.Post("/:name/query", s.handleQuery)
	v1.Post("/:name/summarize", s.handleSummarize)
	v1.Delete("/:name/items/:id", s.handleDelete)
	return app
}

// Serve serves the memory service on ln until ctx ends, then lets the
// requests in flight finish (10 s at most).
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	app := s.App()
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := listener.ShutdownFiber(app, ln); err != nil {
		return fmt.Errorf("shut down memory service: %w", err)
	}
	return <-errc
}

func (s *Service) limitBody(c *fiber.Ctx) error {
	if c.Request().Header.ContentLength() > s.cfg.MaxBodyBytes || len(c.Body()) > s.cfg.MaxBodyBytes {
		return apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", s.cfg.MaxBodyBytes)
	}
	return c.Next()
}

func (s *Service) authenticate(c *fiber.Ctx) error {
	if s.cfg.Authn == nil {
		return errors.New("memory: Config.Authn is not set")
	}
	want := strings.Clone(c.Get(auth.HeaderTenant))
	p, err := s.cfg.Authn.AuthenticateTenant(c.UserContext(), c.Get(fiber.HeaderAuthorization), want, "memory service")
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			s.cfg.Logger.InfoContext(c.UserContext(), "unauthenticated memory request", "path", c.Path(), "reason", err.Error())
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden-memory"`)
			return apierr.New(apierr.CodeUnauthenticated,
				"a valid credential is required: send Authorization: Bearer <workload token for audience warden:memory, or an API key>")
		}
		return err
	}
	c.Locals(localPrincipal, p)
	c.SetUserContext(auth.WithPrincipal(c.UserContext(), p))
	return c.Next()
}

func principalOf(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(localPrincipal).(auth.Principal)
	return p
}

func auditOf(c *fiber.Ctx) *auditInfo {
	if a, ok := c.Locals(localAudit).(*auditInfo); ok {
		return a
	}
	return &auditInfo{}
}

// audit writes one audit record per authenticated call, whatever its
// outcome, with the grants that allowed it, as the control plane does.
func (s *Service) audit(c *fiber.Ctx) error {
	info := &auditInfo{}
	c.Locals(localAudit, info)
	ctx, trail := authz.WithTrail(c.UserContext())
	c.SetUserContext(ctx)
	err := c.Next()
	p := principalOf(c)
	status := c.Response().StatusCode()
	if e, ok := apierr.As(err); ok {
		status = e.Status()
	} else if err != nil {
		status = http.StatusInternalServerError
	}
	outcome := audit.OutcomeAllowed
	switch {
	case status == http.StatusForbidden:
		outcome = audit.OutcomeDenied
	case status >= 400:
		outcome = audit.OutcomeFailed
	}
	rec := audit.Record{Time: s.cfg.Now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: info.verb,
		Namespace: info.namespace, Resource: info.resource, Outcome: outcome, Policy: trail.Policy()}
	if rec.Verb == "" {
		rec.Verb = "memory/" + strings.ToLower(c.Method())
	}
	if rec.Policy == "" {
		rec.Policy = authz.EffectivePolicy(ctx, p)
	}
	if err != nil {
		rec.Reason = apierr.CodeInternal
		if e, ok := apierr.As(err); ok {
			rec.Reason = e.Code
		}
	}
	actx := context.WithoutCancel(c.UserContext())
	if werr := s.cfg.Store.Update(actx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	}); werr != nil {
		s.cfg.Logger.ErrorContext(actx, "write memory audit record", "err", werr, "requestId", listener.RequestIDOf(c))
		if err == nil {
			return apierr.New(apierr.CodeInternal, "the call could not be audited")
		}
	}
	return err
}

// namespaceOf is the namespace a request addresses: a workload's own, else
// ?namespace=, else the credential's namespace.
func namespaceOf(c *fiber.Ctx, p auth.Principal) (string, error) {
	q := c.Query("namespace")
	if p.Agent != "" {
		if q != "" && q != p.Namespace {
			return "", apierr.New(apierr.CodeForbidden, "agent %q works in namespace %q, not %q", p.Agent, p.Namespace, q)
		}
		return p.Namespace, nil
	}
	if q != "" {
		if !resource.IsDNS1123Label(q) {
			return "", invalid("namespace %q is not a DNS-1123 label", q)
		}
		return strings.Clone(q), nil
	}
	if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		return p.Namespace, nil
	}
	return "", invalid("name the memory's namespace with ?namespace=")
}

// note fills the audit record's verb, namespace and resource.
func note(c *fiber.Ctx, verb, ns, memory, item string) {
	a := auditOf(c)
	a.verb, a.namespace, a.resource = "memory/"+verb, ns, "Memory/"+memory
	if item != "" {
		a.resource += "/items/" + item
	}
}

func (s *Service) handleWrite(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	req, err := ParseWriteRequest(c.Body(), strings.Clone(c.Params("name")))
	note(c, "write", ns, req.Memory, "")
	if err != nil {
		return err
	}
	it, err := s.Write(c.UserContext(), p, ns, req)
	if err != nil {
		return err
	}
	note(c, "write", ns, req.Memory, it.ID)
	return c.Status(http.StatusCreated).JSON(it)
}

func (s *Service) handleQuery(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	req, err := ParseQueryRequest(c.Body(), strings.Clone(c.Params("name")))
	note(c, "query", ns, req.Memory, "")
	if err != nil {
		return err
	}
	res, err := s.Query(c.UserContext(), p, ns, req)
	if err != nil {
		return err
	}
	return c.JSON(res)
}

func (s *Service) handleDelete(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	name, id := strings.Clone(c.Params("name")), strings.Clone(c.Params("id"))
	note(c, "delete", ns, name, id)
	if _, err := memoryName(name, ""); err != nil {
		return err
	}
	if id == "" || len(id) > 253 {
		return invalid("item id must be 1 to 253 characters")
	}
	if err := s.Delete(c.UserContext(), p, ns, name, id); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) handleSummarize(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	name := strings.Clone(c.Params("name"))
	note(c, "summarize", ns, name, "")
	if _, err := memoryName(name, ""); err != nil {
		return err
	}
	req, err := ParseSummarizeRequest(c.Body())
	if err != nil {
		return err
	}
	res, err := s.Summarize(c.UserContext(), p, ns, name, req, strings.Clone(c.Get(fiber.HeaderAuthorization)))
	if err != nil {
		return err
	}
	return c.JSON(res)
}

func (s *Service) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.As(err, &fe) && fe.Code == http.StatusRequestEntityTooLarge:
			e = apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", s.cfg.MaxBodyBytes)
		case errors.As(err, &fe) && fe.Code == http.StatusNotFound:
			e = apierr.New(apierr.CodeNotFound, "%s", fe.Message)
		case errors.As(err, &fe) && fe.Code == http.StatusMethodNotAllowed:
			e = apierr.New(apierr.CodeInvalidRequest, "method %s is not allowed on %s", c.Method(), c.Path())
		case errors.As(err, &fe) && fe.Code < 500:
			e = apierr.New(apierr.CodeInvalidRequest, "%s", fe.Message)
		default:
			id := listener.RequestIDOf(c)
			s.cfg.Logger.ErrorContext(c.UserContext(), "memory internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	e = listener.NameRequest(e, listener.RequestIDOf(c))
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}
