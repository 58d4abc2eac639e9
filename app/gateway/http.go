package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
)

// Response headers of the gateway.
const (
	// HeaderIdempotencyKey replaces the derived idempotency key.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is "true" on a deduplicated answer.
	HeaderReplayed = "Idempotent-Replayed"
	// HeaderToolCall names the ToolCall record of the answer.
	HeaderToolCall = "Warden-Tool-Call"
)

const localPrincipal = "warden.principal"

// App returns the gateway's HTTP application (port 8081).
func (g *Gateway) App() *fiber.App {
	app := fiber.New(g.cfg.Timeouts.FiberConfig(fiber.Config{
		AppName:               "warden-gateway",
		BodyLimit:             4 * g.cfg.MaxInputBytes,
		DisableStartupMessage: true,
		ErrorHandler:          g.errorHandler,
		JSONEncoder:           resource.MarshalValue,
	}))
	g.cfg.Timeouts.Harden(app)
	app.Use(listener.RequestID, listener.Recover(g.log), g.limitBody)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	v1 := app.Group("/v1", listener.APIHeaders, g.authenticate)
	v1.Post("/tool-calls", g.handleCreate)
	v1.Get("/tool-calls/:id", g.handleGet)
	v1.Post("/tool-calls/:id/cancel", g.handleCancel)
	v1.Post("/tool-calls/:id/approve", g.handleApprove)
	v1.Post("/tool-calls/:id/replay", g.handleReplay)
	v1.Post("/hooks/aos", g.handleAOS)
	return app
}

// Serve serves the gateway on ln until ctx ends.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	app := g.App()
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := listener.ShutdownFiber(app, ln); err != nil {
		return fmt.Errorf("shut down tool gateway: %w", err)
	}
	return <-errc
}

// param returns a path parameter as a string of its own: Fiber's points
// into a buffer reused once the handler returns, and a call's name may
// reach work that outlives it (resumption, the recorder's batches).
func param(c *fiber.Ctx, name string) string {
	return strings.Clone(c.Params(name))
}

func (g *Gateway) limitBody(c *fiber.Ctx) error {
	if c.Request().Header.ContentLength() > g.cfg.MaxInputBytes || len(c.Body()) > g.cfg.MaxInputBytes {
		return apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", g.cfg.MaxInputBytes)
	}
	return c.Next()
}

func (g *Gateway) authenticate(c *fiber.Ctx) error {
	want := strings.Clone(c.Get(auth.HeaderTenant))
	p, err := g.cfg.Authn.AuthenticateTenant(c.UserContext(), c.Get(fiber.HeaderAuthorization), want, "tool gateway")
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			g.log.InfoContext(c.UserContext(), "unauthenticated gateway request", "path", c.Path(), "reason", err.Error())
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="warden-gateway"`)
			return apierr.New(apierr.CodeUnauthenticated,
				"a valid credential is required: send Authorization: Bearer <workload token for audience warden:tool-gateway>")
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

func (g *Gateway) errorHandler(c *fiber.Ctx, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		var fe *fiber.Error
		switch {
		case errors.As(err, &fe) && fe.Code == http.StatusRequestEntityTooLarge:
			e = apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes", g.cfg.MaxInputBytes)
		case errors.As(err, &fe) && fe.Code == http.StatusNotFound:
			e = apierr.New(apierr.CodeNotFound, "%s", fe.Message)
		case errors.As(err, &fe) && fe.Code == http.StatusMethodNotAllowed:
			e = apierr.New(apierr.CodeInvalidRequest, "method %s is not allowed on %s", c.Method(), c.Path())
		case errors.As(err, &fe) && fe.Code < 500:
			e = apierr.New(apierr.CodeInvalidRequest, "%s", fe.Message)
		default:
			id := listener.RequestIDOf(c)
			g.log.ErrorContext(c.UserContext(), "gateway internal error", "err", err, "method", c.Method(), "path", c.Path(), "requestId", id)
			e = listener.InternalError(id)
		}
	}
	e = listener.NameRequest(e, listener.RequestIDOf(c))
	if s, ok := e.Details["retryAfterSeconds"].(int64); ok {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(s, 10))
	}
	return c.Status(e.Status()).JSON(apierr.Body{Error: e})
}

// DecodeCallRequest parses the body of POST /v1/tool-calls strictly:
// unknown fields, trailing data and an input that is not an object are
// refused with InvalidRequest.
func DecodeCallRequest(body []byte) (CallRequest, error) {
	var req CallRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, apierr.New(apierr.CodeInvalidRequest, `the body is empty: send {"tool": "<system>.<action>", "input": {…}}`)
	}
	// input is taken raw first, so that an input that is not an object
	// gets its own message rather than a type error.
	var wire struct {
		CallRequest
		Input json.RawMessage `json:"input"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&wire); err != nil {
		return req, apierr.New(apierr.CodeInvalidRequest, "the body is not a valid tool call: %s", err)
	}
	if d.More() {
		return req, apierr.New(apierr.CodeInvalidRequest, "the body has data after the JSON object")
	}
	req = wire.CallRequest
	if t := bytes.TrimSpace(wire.Input); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if t[0] != '{' {
			return req, apierr.New(apierr.CodeInvalidRequest, "input must be a JSON object")
		}
		if err := json.Unmarshal(t, &req.Input); err != nil {
			return req, apierr.New(apierr.CodeInvalidRequest, "the body is not a valid tool call: %s", err)
		}
	}
	if req.Wait != "" {
		d, err := time.ParseDuration(req.Wait)
		if err != nil || d < 0 {
			return req, apierr.New(apierr.CodeInvalidRequest, "wait %q is not a duration such as 30s", req.Wait)
		}
	}
	if len(req.Execution) > 253 {
		return req, apierr.New(apierr.CodeInvalidRequest, "execution is longer than 253 characters")
	}
	return req, nil
}

// respond writes an outcome: 200 when finished, 202 while it awaits
// approval or runs, with the gateway's headers.
func (g *Gateway) respond(c *fiber.Ctx, out *Outcome, err error) error {
	if out != nil && out.Call != nil {
		c.Set(HeaderToolCall, out.Call.Metadata.Name)
		if out.Replayed {
			c.Set(HeaderReplayed, "true")
		}
		for _, w := range out.Warnings {
			c.Response().Header.Add(fiber.HeaderWarning, `299 warden "`+w+`"`)
		}
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !Finished(out.Phase()) {
		status = http.StatusAccepted
	}
	return c.Status(status).JSON(out.Call)
}

func (g *Gateway) handleCreate(c *fiber.Ctx) error {
	req, err := DecodeCallRequest(c.Body())
	if err != nil {
		return err
	}
	if k := c.Get(HeaderIdempotencyKey); k != "" {
		if len(k) > 255 {
			return apierr.New(apierr.CodeInvalidRequest, "Idempotency-Key is longer than 255 characters")
		}
		req.IdempotencyKey = strings.Clone(k)
	}
	out, err := g.Call(c.UserContext(), principalOf(c), req)
	return g.respond(c, out, err)
}

// namespaceOf is the namespace a request about a call addresses: the
// agent's own, or ?namespace= for people (default their key's namespace).
func namespaceOf(c *fiber.Ctx, p auth.Principal) (string, error) {
	if p.Agent != "" {
		return p.Namespace, nil
	}
	if ns := c.Query("namespace"); ns != "" {
		// A copy: work the call starts (a resumption) outlives the
		// handler, and Fiber reuses the query's buffer after it.
		return strings.Clone(ns), nil
	}
	if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
		return p.Namespace, nil
	}
	return "", apierr.New(apierr.CodeInvalidRequest, "name the call's namespace with ?namespace=")
}

func (g *Gateway) handleGet(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	name := param(c, "id")
	if p.Agent == "" {
		if err := g.cfg.Authz.Authorize(c.UserContext(), p, auth.VerbGet, ns, "toolcalls"); err != nil {
			if errors.Is(err, auth.ErrForbidden) {
				return apierr.New(apierr.CodeForbidden, "%s may not read tool calls in namespace %q", p.Subject, ns)
			}
			return err
		}
	}
	var wait time.Duration
	if w := c.Query("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d < 0 {
			return apierr.New(apierr.CodeInvalidRequest, "wait %q is not a duration such as 30s", w)
		}
		wait = min(d, MaxWait)
	}
	obj, err := g.read(c.UserContext(), p.Tenant, ns, name)
	if err != nil {
		return err
	}
	if p.Agent != "" && refName(obj.Spec, "agentRef") != p.Agent {
		// Another agent's call does not exist for this caller.
		return apierr.New(apierr.CodeNotFound, "tool call %q not found in namespace %q", name, ns)
	}
	if wait == 0 {
		return g.respond(c, &Outcome{Call: obj}, nil)
	}
	if phase, _ := obj.Status["phase"].(string); !Finished(phase) {
		if obj, err = g.waitFor(c.UserContext(), p.Tenant, ns, name, wait, Finished); err != nil {
			return err
		}
	}
	// The caller waits for the outcome: a denied approval is its answer,
	// the documented ApprovalDenied (403), as for the call itself.
	return g.respond(c, &Outcome{Call: obj}, approvalRefusal(obj))
}

func (g *Gateway) handleCancel(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	obj, err := g.Cancel(c.UserContext(), p, ns, param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(obj)
}

func (g *Gateway) handleApprove(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := g.callNamespace(c, p)
	if err != nil {
		return err
	}
	var body struct {
		Rationale string `json:"rationale"`
	}
	if len(bytes.TrimSpace(c.Body())) > 0 {
		d := json.NewDecoder(bytes.NewReader(c.Body()))
		d.DisallowUnknownFields()
		if err := d.Decode(&body); err != nil {
			return apierr.New(apierr.CodeInvalidRequest, `the body must be {"rationale": "…"}: %s`, err)
		}
	}
	ap, err := g.Decide(c.UserContext(), p, ns, ApprovalName(param(c, "id")), api.DecideRequest{Decision: api.DecisionApprove, Rationale: body.Rationale}, false)
	if err != nil {
		return err
	}
	return c.JSON(ap)
}

func (g *Gateway) handleReplay(c *fiber.Ctx) error {
	p := principalOf(c)
	ns, err := namespaceOf(c, p)
	if err != nil {
		return err
	}
	if err := g.cfg.Authz.Authorize(c.UserContext(), p, authz.VerbCreate, ns, authz.ObjToolCallsReplay); err != nil {
		if errors.Is(err, auth.ErrForbidden) {
			return apierr.New(apierr.CodeForbidden, "%s may not replay tool calls in namespace %q", p.Subject, ns)
		}
		return err
	}
	out, err := g.Replay(c.UserContext(), p, ns, param(c, "id"))
	return g.respond(c, out, err)
}

// Replay runs a recorded call again, as its agent, through every step: the
// policies of today decide, and it re-executes only where a policy allows
// force (otherwise the original is returned while its key is claimed, or
// the call is denied).
func (g *Gateway) Replay(ctx context.Context, p auth.Principal, ns, name string) (*Outcome, error) {
	obj, err := g.read(ctx, p.Tenant, ns, name)
	if err != nil {
		return nil, err
	}
	v, err := viewOf(obj)
	if err != nil {
		return nil, err
	}
	agent := auth.Principal{Tenant: p.Tenant, Namespace: ns, Agent: v.Spec.AgentRef.Name, Kind: auth.KindAgent,
		Subject: p.Subject, Role: p.Role, Environment: obj.Metadata.Annotations[AnnotationEnvironment]}
	return g.Call(ctx, agent, CallRequest{Tool: v.Spec.ToolRef.Name, Input: v.Spec.Input, Execution: v.Spec.ExecutionRef.Name,
		Force: true, replayOf: name})
}
