package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/store"
)

// listFilters are the query filters of the tool call and approval lists,
// each the field it selects on: GET /v1/namespaces/{ns}/toolcalls?agent=…
var listFilters = map[string]map[string]string{
	resource.KindToolCall: {
		"agent": "spec.agentRef.name",
		"tool":  "spec.toolRef.name",
		"phase": "status.phase",
	},
	resource.KindExecution: {
		"agent": "spec.agentRef.name",
		"phase": "status.phase",
	},
	resource.KindApproval: {
		"agent":  "spec.agentRef.name",
		"tool":   "spec.toolRef.name",
		"status": "status.status",
	},
}

// sinceQuery reads ?since= as a duration back from now (1h) or an RFC 3339
// time; zero when absent.
func sinceQuery(c *fiber.Ctx, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(c.Query("since"))
	if v == "" {
		return time.Time{}, nil
	}
	t, err := parseSince(v, now)
	if err != nil {
		return time.Time{}, badRequest("since %q is neither a duration such as 1h nor an RFC 3339 time", v)
	}
	return t, nil
}

// createdBefore reports whether o was created before since (never when
// since is zero).
func createdBefore(o *resource.Object, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, o.Metadata.CreationTimestamp)
	return err == nil && t.Before(since)
}

func (s *Server) approvalRoutes(v1 fiber.Router) {
	v1.Post("/approvals", s.handleApprovalCreate)
	v1.Post("/approvals/:id/decide", s.handleDecide(false))
	v1.Post("/approvals/:id/override", s.handleDecide(true))
	v1.Post("/namespaces/:ns/approvals/:id/decide", s.handleDecide(false))
}

// decodeStrict parses a JSON body into v, refusing unknown fields.
func decodeStrict(body []byte, v any, shape string) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badRequest("the body must be %s: %s", shape, err.Error())
	}
	return nil
}

// handleDecide serves the three decision endpoints. Without a namespace in
// the path, the approval is found by name in the caller's namespaces.
func (s *Server) handleDecide(override bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if s.gateway == nil {
			return apierr.New(apierr.CodeUnavailable, "the tool gateway is not running")
		}
		var req api.DecideRequest
		if err := decodeStrict(c.Body(), &req, `{"decision": "approve"|"deny", "rationale": "…"}`); err != nil {
			return err
		}
		p := principal(c)
		// The decision may resume the call in a goroutine that outlives
		// the handler and Fiber's buffers.
		name := strings.Clone(c.Params("id"))
		ns := strings.Clone(c.Params("ns"))
		if ns == "" {
			var err error
			if ns, err = s.findApproval(c, p, name); err != nil {
				return err
			}
		}
		info := auditOf(c)
		info.verb, info.namespace, info.resource = "approvals/decide", ns, "Approval/"+name
		if override {
			info.verb = "approvals/override"
		}
		ap, err := s.gateway.Decide(c.UserContext(), p, ns, name, req, override)
		if err != nil {
			return err
		}
		// The gateway recorded the decision, its channel and rationale.
		info.recorded = true
		return c.JSON(present(ap))
	}
}

// findApproval returns the namespace of the approval named name, looking
// in the caller's namespace, or in every namespace for a tenant-wide
// credential.
func (s *Server) findApproval(c *fiber.Ctx, p auth.Principal, name string) (string, error) {
	ns := p.Namespace
	if ns == auth.AllNamespaces {
		ns = ""
	}
	sel, err := resource.ParseSelector("metadata.name=" + name)
	if err != nil {
		return "", badRequest("invalid approval id %q", name)
	}
	var found []*resource.Object
	err = s.store.View(c.UserContext(), p.Tenant, func(ctx2 context.Context, r store.Reader) error {
		res, err := r.ResourceList(ctx2, store.ListParams{Kind: resource.KindApproval, Namespace: ns, Selector: sel, Limit: 2})
		if err != nil {
			return err
		}
		found = res.Items
		return nil
	})
	if err != nil {
		return "", storeError(err)
	}
	if len(found) == 0 {
		return "", notFound("approval %q not found", name)
	}
	return found[0].Metadata.Namespace, nil
}

// handleApprovalCreate serves POST /v1/approvals: an agent asks a person
// for a decision outside a tool call (a human-in-the-loop question). The
// body is {"tool": "<system>.<action>", "sideEffect": "…", "reason": "…",
// "timeout": "1h"}; the agent polls GET …/approvals/{id}.
func (s *Server) handleApprovalCreate(c *fiber.Ctx) error {
	if s.gateway == nil {
		return apierr.New(apierr.CodeUnavailable, "the tool gateway is not running")
	}
	var req gateway.ApprovalRequest
	if err := decodeStrict(c.Body(), &req, `{"tool": "…", "sideEffect": "…", "reason": "…", "timeout": "1h"}`); err != nil {
		return err
	}
	p := principal(c)
	ap, err := s.gateway.RequestApproval(c.UserContext(), p, req)
	if err != nil {
		return err
	}
	info := auditOf(c)
	info.verb, info.namespace, info.resource = "approvals/create", ap.Metadata.Namespace, "Approval/"+ap.Metadata.Name
	return c.Status(fiber.StatusCreated).JSON(present(ap))
}
