package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/store"
)

// Keys of per-request values kept in fiber locals.
const (
	localRequestID = listener.LocalRequestID
	localPrincipal = "warden.principal"
	localAudit     = "warden.audit"
)

// auditInfo is filled by handlers so the audit middleware can record what a
// call touched.
type auditInfo struct {
	verb      string
	namespace string
	resource  string
	policy    string
	// recorded is set by a handler whose service wrote the call's audit
	// record itself, with more than this one would say (a decision and
	// its rationale); a successful call then gets no second record.
	recorded bool
}

// hardBodyLimit is where the HTTP transport stops reading and drops the
// connection.
const hardBodyLimit = 4 * MaxBodyBytes

// limitBody answers 413 for bodies over MaxBodyBytes.
func limitBody(c *fiber.Ctx) error {
	if c.Request().Header.ContentLength() > MaxBodyBytes || len(c.Body()) > MaxBodyBytes {
		return apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", MaxBodyBytes)
	}
	return c.Next()
}

// authenticate resolves the caller; nothing under /v1 runs without one.
func (s *Server) authenticate(c *fiber.Ctx) error {
	if s.oidc != nil && c.Get(fiber.HeaderAuthorization) == "" && c.Cookies(oidc.SessionCookie) != "" {
		return s.authenticateSession(c)
	}
	want := strings.Clone(c.Get(auth.HeaderTenant))
	p, err := s.authn.AuthenticateTenant(c.UserContext(), c.Get(fiber.HeaderAuthorization), want, "control plane")
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			s.log.InfoContext(c.UserContext(), "unauthenticated request", "method", c.Method(), "path", c.Path(), "reason", err.Error(), "requestId", c.Locals(localRequestID))
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden"`)
			return apierr.New(apierr.CodeUnauthenticated, "a valid credential is required: send Authorization: Bearer <api key or token>")
		}
		return err
	}
	c.Locals(localPrincipal, p)
	s.noteAPIKeyUse(p, c.Get(fiber.HeaderAuthorization))
	c.SetUserContext(auth.WithPrincipal(c.UserContext(), p))
	return c.Next()
}

// audit writes one audit record per authenticated call, whatever its outcome.
func (s *Server) audit(c *fiber.Ctx) error {
	info := &auditInfo{}
	c.Locals(localAudit, info)
	ctx, trail := authz.WithTrail(c.UserContext())
	c.SetUserContext(ctx)
	err := c.Next()
	if err == nil && info.recorded {
		return nil
	}
	p := principal(c)
	status := c.Response().StatusCode()
	if err != nil {
		status = statusOf(err)
	}
	outcome := audit.OutcomeAllowed
	switch {
	case status == http.StatusForbidden:
		outcome = audit.OutcomeDenied
	case status >= 400:
		outcome = audit.OutcomeFailed
	}
	verb := info.verb
	if verb == "" {
		verb = strings.ToLower(c.Method())
	}
	rec := audit.Record{
		Time: s.now().UTC(), Tenant: p.Tenant, Actor: p.Subject, Verb: verb, Namespace: info.namespace,
		Resource: info.resource, Outcome: outcome, Policy: info.policy,
	}
	if rec.Policy == "" {
		rec.Policy = trail.Policy()
	}
	if rec.Policy == "" {
		rec.Policy = authz.EffectivePolicy(ctx, p)
	}
	if err != nil {
		if e, ok := apierr.As(err); ok {
			rec.Reason = e.Code
		} else {
			rec.Reason = apierr.CodeInternal
		}
	}
	// The audit write must not be lost when the client goes away mid-call.
	ctx = context.WithoutCancel(c.UserContext())
	werr := s.store.Update(ctx, p.Tenant, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AuditInsert(ctx, rec)
		return err
	})
	if werr != nil {
		s.log.ErrorContext(ctx, "write audit record", "err", werr, "requestId", c.Locals(localRequestID))
		if err == nil {
			return apierr.New(apierr.CodeInternal, "the call could not be audited")
		}
	}
	return err
}

func principal(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(localPrincipal).(auth.Principal)
	return p
}

func auditOf(c *fiber.Ctx) *auditInfo {
	if a, ok := c.Locals(localAudit).(*auditInfo); ok {
		return a
	}
	return &auditInfo{}
}

func statusOf(err error) int {
	if e, ok := apierr.As(err); ok {
		return e.Status()
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return http.StatusInternalServerError
}

// errorHandler renders every error in the documented shape. Internal error
// text never reaches the client; it goes to the log with the request id.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.As(err, &fe) && fe.Code == http.StatusRequestEntityTooLarge:
			e = apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", MaxBodyBytes)
		case errors.As(err, &fe) && fe.Code == http.StatusNotFound:
			e = apierr.New(apierr.CodeNotFound, "%s", fe.Message)
		case errors.As(err, &fe) && fe.Code == http.StatusMethodNotAllowed:
			e = apierr.New(apierr.CodeInvalidRequest, "method %s is not allowed on %s", c.Method(), c.Path())
		case errors.As(err, &fe) && fe.Code < 500:
			e = apierr.New(apierr.CodeInvalidRequest, "%s", fe.Message)
		case errors.Is(err, context.DeadlineExceeded):
			e = apierr.New(apierr.CodeTimeout, "the request timed out")
		default:
			id := listener.RequestIDOf(c)
			s.log.ErrorContext(c.UserContext(), "internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	e = listener.NameRequest(e, listener.RequestIDOf(c))
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeInvalidRequest, format, args...)
}

func notFound(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.CodeNotFound, format, args...)
}

func forbidden(err error) *apierr.Error {
	return apierr.New(apierr.CodeForbidden, "%s", err.Error())
}

// storeErrorFor maps store sentinels onto API errors for a call about t,
// with messages that name the resource rather than the storage layer.
func storeErrorFor(err error, t target) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		if t.ns == "" {
			return apierr.New(apierr.CodeNotFound, "%s %q not found", t.info.Kind, t.name)
		}
		return apierr.New(apierr.CodeNotFound, "%s %q not found in namespace %q", t.info.Kind, t.name, t.ns)
	case errors.Is(err, store.ErrConflict):
		return apierr.New(apierr.CodeConflict, "%s %q was modified since resourceVersion you sent: read it again and retry", t.info.Kind, t.name)
	}
	return storeError(err)
}

// storeError maps store sentinels onto API errors. Driver detail never
// reaches the client: only the sentinel's own text is shown.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return apierr.New(apierr.CodeNotFound, "%s", store.ErrNotFound.Error())
	case errors.Is(err, store.ErrConflict):
		return apierr.New(apierr.CodeConflict, "%s", store.ErrConflict.Error())
	case errors.Is(err, store.ErrAlreadyExists):
		return apierr.New(apierr.CodeConflict, "%s", store.ErrAlreadyExists.Error())
	case errors.Is(err, store.ErrGone):
		return apierr.New(apierr.CodeGone, "%s; list again and watch from the list's resourceVersion", store.ErrGone.Error())
	case errors.Is(err, store.ErrInvalidContinue):
		return apierr.New(apierr.CodeInvalidRequest, "%s; start the list again without continue", store.ErrInvalidContinue.Error())
	}
	return err
}
