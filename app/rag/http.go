package rag

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
)

const localPrincipal = "warden.rag.principal"

// App returns the RAG service's HTTP application (port 8085). It needs
// Config.Authn and Config.Authz.
func (s *Service) App() (*fiber.App, error) {
	if s.cfg.Authn == nil || s.cfg.Authz == nil {
		return nil, errors.New("rag: Config.Authn and Config.Authz are required to serve HTTP")
	}
	app := fiber.New(s.cfg.Timeouts.FiberConfig(fiber.Config{
		AppName:               "warden-rag",
		BodyLimit:             s.cfg.MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		JSONEncoder:           resource.MarshalValue,
	}))
	s.cfg.Timeouts.Harden(app)
	app.Use(listener.RequestID, listener.Recover(s.log))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	v1 := app.Group("/v1/rag", listener.APIHeaders, s.authenticate)
	v1.Get("/sources/:id/status", s.handleStatus)
	v1.Post("/index", s.handleIndex)
	v1.Post("/retrieve", s.handleRetrieve)
	v1.Post("/:name/index", s.handleIndex)
	v1.Post("/:name/retrieve", s.handleRetrieve)
	return app, nil
}

// Serve serves the RAG API on ln until ctx ends, then lets the requests
// in flight finish (10 s at most).
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	app, err := s.App()
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := listener.ShutdownFiber(app, ln); err != nil {
		return fmt.Errorf("shut down RAG service: %w", err)
	}
	return <-errc
}

func (s *Service) authenticate(c *fiber.Ctx) error {
	want := strings.Clone(c.Get(auth.HeaderTenant))
	p, err := s.cfg.Authn.AuthenticateTenant(c.UserContext(), c.Get(fiber.HeaderAuthorization), want, "RAG service")
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			s.log.InfoContext(c.UserContext(), "unauthenticated RAG request", "path", c.Path(), "reason", err.Error())
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden-rag"`)
			return apierr.New(apierr.CodeUnauthenticated,
				"a valid credential is required: send Authorization: Bearer <workload token for audience warden:rag, or API key>")
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

// namespaceOf is the namespace of a request: ?namespace=, else the
// credential's, else "default" (DESIGN.md: paths that name no namespace).
// Authorization decides whether the caller may act there.
func namespaceOf(c *fiber.Ctx, p auth.Principal) (string, error) {
	ns := strings.Clone(c.Query("namespace"))
	if ns == "" && p.Namespace != auth.AllNamespaces {
		ns = p.Namespace
	}
	if ns == "" {
		ns = resource.DefaultNamespace
	}
	if !resource.IsDNS1123Label(ns) {
		return "", apierr.New(apierr.CodeInvalidRequest, "namespace %q is not a DNS-1123 label", ns)
	}
	return ns, nil
}

// authorize resolves the namespace and asks app/authz.
func (s *Service) authorize(c *fiber.Ctx, verb, object string) (auth.Principal, string, error) {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return p, "", err
	}
	if err := s.cfg.Authz.Authorize(c.UserContext(), p, verb, ns, object); err != nil {
		return p, "", err
	}
	return p, ns, nil
}

// handleIndex serves POST /v1/rag/{name}/index and POST /v1/rag/index:
// 202 with the refresh job.
func (s *Service) handleIndex(c *fiber.Ctx) error {
	req, err := DecodeIndexRequest(c.Body(), strings.Clone(c.Params("name")))
	if err != nil {
		return err
	}
	p, ns, err := s.authorize(c, authz.VerbCreate, authz.ObjRAGIndex)
	if err != nil {
		return err
	}
	out, err := s.Enqueue(c.UserContext(), p.Tenant, ns, req.Index)
	if err != nil {
		return err
	}
	return c.Status(http.StatusAccepted).JSON(out)
}

// handleRetrieve serves POST /v1/rag/{name}/retrieve and POST
// /v1/rag/retrieve.
func (s *Service) handleRetrieve(c *fiber.Ctx) error {
	req, err := DecodeRetrieveRequest(c.Body(), strings.Clone(c.Params("name")))
	if err != nil {
		return err
	}
	// The role decides first; an agent may then retrieve only from the
	// indexes its compiled manifest names. Both refusals are audited.
	p, ns, err := s.authorize(c, authz.VerbCreate, authz.ObjRAGRetrieve)
	if err == nil {
		err = s.checkBound(c.UserContext(), p, ns, req.Index)
	}
	if err != nil {
		if ns == "" {
			ns, _ = namespaceOf(c, p)
		}
		s.auditDenied(c.UserContext(), p, ns, req.Index, err)
		return err
	}
	out, err := s.Retrieve(c.UserContext(), p.Tenant, ns, req, Caller{Subject: p.Subject, Agent: p.Agent})
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// handleStatus serves GET /v1/rag/sources/{id}/status.
func (s *Service) handleStatus(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	if !resource.IsDNS1123Label(id) {
		return apierr.New(apierr.CodeInvalidRequest, "%q is not a knowledge source name (a DNS-1123 label)", id)
	}
	p, ns, err := s.authorize(c, auth.VerbGet, "knowledgesources")
	if err != nil {
		return err
	}
	out, err := s.Status(c.UserContext(), p.Tenant, ns, id)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (s *Service) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.Is(err, ErrInvalid):
			e = apierr.New(apierr.CodeInvalidRequest, "%s", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		case errors.Is(err, ErrNotFound):
			e = apierr.New(apierr.CodeNotFound, "%s", strings.TrimPrefix(err.Error(), ErrNotFound.Error()+": "))
		case errors.Is(err, auth.ErrForbidden):
			e = apierr.New(apierr.CodeForbidden, "%s", strings.TrimPrefix(err.Error(), auth.ErrForbidden.Error()+": "))
		case errors.Is(err, errBusy):
			e = apierr.New(apierr.CodeUnavailable, "%s", strings.TrimPrefix(err.Error(), errBusy.Error()+": "))
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
			s.log.ErrorContext(c.UserContext(), "RAG internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	e = listener.NameRequest(e, listener.RequestIDOf(c))
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}
