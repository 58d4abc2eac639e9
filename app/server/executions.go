package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/execution"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
)

// executionRoutes serves the Execution API, promotion and evaluation
// (docs/executions.md). Get and list are the generic resource routes
// (with the agent and phase filters of listFilters).
func (s *Server) executionRoutes(v1 fiber.Router) {
	v1.Post("/namespaces/:ns/executions", s.handleExecutionCreate)
	v1.Post("/namespaces/:ns/executions/:name/cancel", s.handleExecutionCancel)
	v1.Post("/namespaces/:ns/executions/:name/replay", s.handleExecutionReplay)
	v1.Get("/namespaces/:ns/executions/:name/events", s.handleExecutionEvents)
	v1.Post("/promote", s.handlePromote)
	v1.Post("/eval/:name/run", s.handleEvalRun)
}

// Executions returns the execution service, for the job queue to bind.
func (s *Server) Executions() *execution.Service { return s.executions }

// executionTarget reads the path's namespace and name, fills the audit
// record and authorizes verb on object there.
func (s *Server) executionTarget(c *fiber.Ctx, verb, object, auditVerb string) (ns, name string, err error) {
	ns, name = strings.Clone(c.Params("ns")), strings.Clone(c.Params("name"))
	a := auditOf(c)
	a.verb, a.namespace, a.resource = auditVerb, ns, resource.KindExecution+"/"+name
	if name == "" {
		a.resource = resource.KindExecution
	}
	if err := s.check(c, verb, ns, object); err != nil {
		return "", "", err
	}
	return ns, name, nil
}

// executionError maps the execution service's errors onto API errors.
func executionError(err error) error {
	if _, ok := apierr.As(err); ok {
		return err
	}
	msg := func(sentinel error) string { return strings.TrimPrefix(err.Error(), sentinel.Error()+": ") }
	switch {
	case errors.Is(err, execution.ErrNotFound):
		return apierr.New(apierr.CodeNotFound, "%s not found", msg(execution.ErrNotFound))
	case errors.Is(err, execution.ErrInvalid):
		return apierr.New(apierr.CodeInvalidRequest, "%s", msg(execution.ErrInvalid))
	case errors.Is(err, execution.ErrConflict):
		return apierr.New(apierr.CodeConflict, "%s", msg(execution.ErrConflict))
	}
	return storeError(err)
}

// handleExecutionCreate serves POST /v1/namespaces/{ns}/executions.
func (s *Server) handleExecutionCreate(c *fiber.Ctx) error {
	ns, _, err := s.executionTarget(c, authz.VerbCreate, authz.ObjExecutions, "executions/create")
	if err != nil {
		return err
	}
	var req execution.CreateRequest
	if err := decodeStrict(c.Body(), &req, `{"agent": "…", "input": {…} or "prompt": "…", "environment": "…"}`); err != nil {
		return err
	}
	obj, err := s.executions.Create(c.UserContext(), principal(c), ns, req)
	if err != nil {
		return executionError(err)
	}
	auditOf(c).resource = resource.KindExecution + "/" + obj.Metadata.Name
	return c.Status(fiber.StatusCreated).JSON(obj)
}

// handleExecutionCancel serves POST …/executions/{name}/cancel.
func (s *Server) handleExecutionCancel(c *fiber.Ctx) error {
	ns, name, err := s.executionTarget(c, authz.VerbCreate, authz.ObjExecutionsCancel, "executions/cancel")
	if err != nil {
		return err
	}
	obj, err := s.executions.Cancel(c.UserContext(), principal(c), ns, name)
	if err != nil {
		return executionError(err)
	}
	return c.JSON(obj)
}

// handleExecutionReplay serves POST …/executions/{name}/replay with an
// optional body {"force": true}.
func (s *Server) handleExecutionReplay(c *fiber.Ctx) error {
	ns, name, err := s.executionTarget(c, authz.VerbCreate, authz.ObjExecutionsReplay, "executions/replay")
	if err != nil {
		return err
	}
	var req execution.ReplayRequest
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		if err := decodeStrict(c.Body(), &req, `{"force": false}`); err != nil {
			return err
		}
	}
	res, err := s.executions.Replay(c.UserContext(), principal(c), ns, name, req, strings.Clone(c.Get(fiber.HeaderAuthorization)))
	if err != nil {
		return executionError(err)
	}
	return c.JSON(res)
}

// eventPoll is how often a followed event stream looks for events written
// by another replica (the in-process bus wakes it at once otherwise).
const eventPoll = 2 * time.Second

// handleExecutionEvents serves GET …/executions/{name}/events: the
// execution's events after ?after= (or Last-Event-ID), as newline-delimited
// JSON, or server-sent events when the client accepts text/event-stream.
// With ?follow=true the stream stays open until the execution's last
// event, with a keep-alive (an empty line; an SSE comment) every quiet
// poll.
func (s *Server) handleExecutionEvents(c *fiber.Ctx) error {
	ns, name, err := s.executionTarget(c, auth.VerbGet, "executions", auth.VerbGet)
	if err != nil {
		return err
	}
	after := int64(0)
	from := c.Query("after")
	if from == "" {
		from = c.Get("Last-Event-ID")
	}
	if from != "" {
		if after, err = strconv.ParseInt(from, 10, 64); err != nil || after < 0 {
			return badRequest("after must be an event sequence number, got %q", from)
		}
	}
	follow := false
	if v := c.Query("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			return badRequest("follow must be true or false, got %q", v)
		}
	}
	p := principal(c)
	if _, err := s.executions.Get(c.UserContext(), p.Tenant, ns, name); err != nil {
		return executionError(err)
	}
	sse := strings.Contains(c.Get(fiber.HeaderAccept), "text/event-stream")
	write := func(w *bufio.Writer, ev events.Event) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if sse {
			_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, b)
		} else {
			_, err = w.Write(append(b, '\n'))
		}
		if err != nil {
			return err
		}
		return w.Flush()
	}
	if sse {
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
	} else {
		c.Set(fiber.HeaderContentType, "application/x-ndjson")
	}
	if !follow {
		evs, _, err := s.executions.Events(c.UserContext(), p.Tenant, ns, name, after)
		if err != nil {
			return executionError(err)
		}
		w := bufio.NewWriter(c.Response().BodyWriter())
		for _, ev := range evs {
			if err := write(w, ev); err != nil {
				return err
			}
		}
		return nil
	}
	ctx := s.base
	id := listener.RequestIDOf(c)
	tenant := p.Tenant
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer listener.LogPanic(ctx, s.log, "execution event stream", id)
		keepAlive := []byte("\n")
		if sse {
			keepAlive = []byte(": keep-alive\n\n")
		}
		err := s.executions.Follow(ctx, tenant, ns, name, after, eventPoll, func(ev events.Event) error { return write(w, ev) },
			func() error {
				if _, err := w.Write(keepAlive); err != nil {
					return err
				}
				return w.Flush()
			})
		if err != nil {
			s.log.Debug("execution event stream ended", "execution", name, "err", err)
		}
	})
	return nil
}

// handlePromote serves POST /v1/promote.
func (s *Server) handlePromote(c *fiber.Ctx) error {
	var req execution.PromoteRequest
	if err := decodeStrict(c.Body(), &req, `{"agent": "…", "namespace": "…", "from": "dev", "to": "staging"}`); err != nil {
		return err
	}
	p := principal(c)
	if req.Namespace == "" {
		req.Namespace = resource.DefaultNamespace
		if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
			req.Namespace = p.Namespace
		}
	}
	a := auditOf(c)
	a.verb, a.namespace, a.resource = "promote", req.Namespace, resource.KindAgent+"/"+req.Agent
	if err := s.check(c, authz.VerbCreate, req.Namespace, authz.ObjPromote); err != nil {
		return err
	}
	res, err := s.executions.Promote(c.UserContext(), s.pipeline, p, req)
	if err != nil {
		return executionError(err)
	}
	return c.JSON(res)
}

// handleEvalRun serves POST /v1/eval/{name}/run: it runs the suite in the
// body against an agent and answers each case's verdict.
func (s *Server) handleEvalRun(c *fiber.Ctx) error {
	var req execution.EvalRequest
	if err := decodeStrict(c.Body(), &req, `{"agent": "…", "environment": "…", "cases": [{"name", "prompt", "expectTools", "expectAnswer"}]}`); err != nil {
		return err
	}
	p := principal(c)
	if req.Namespace == "" {
		req.Namespace = resource.DefaultNamespace
		if p.Namespace != "" && p.Namespace != auth.AllNamespaces {
			req.Namespace = p.Namespace
		}
	}
	name := strings.Clone(c.Params("name"))
	a := auditOf(c)
	a.verb, a.namespace, a.resource = "eval/run", req.Namespace, "eval/"+name
	if err := s.check(c, authz.VerbCreate, req.Namespace, authz.ObjEvalRun); err != nil {
		return err
	}
	if err := s.check(c, authz.VerbCreate, req.Namespace, authz.ObjExecutions); err != nil {
		return err
	}
	res, err := s.executions.Eval(c.UserContext(), p, name, req)
	if err != nil {
		return executionError(err)
	}
	return c.JSON(res)
}
