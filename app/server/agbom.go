package server

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/agbom"
	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
)

// agbomObject is the authorization object of the AgBOM endpoints: a BOM
// describes an agent, so reading one needs get on agents (viewers, and an
// agent's own workload credential) and refreshing one needs apply on
// agents (editors).
const agbomObject = "agents"

// agbomRoutes serves the AgBOM API (docs/agbom.md). It is registered
// before the generic /v1/{plural}/{name} routes, which would otherwise
// take /v1/agbom/{agent}.
func (s *Server) agbomRoutes(v1 fiber.Router) {
	v1.Get("/agbom/:agent", s.handleAgBOMGet)
	v1.Post("/agbom/:agent/refresh", s.handleAgBOMRefresh)
	v1.Get("/agbom/:agent/diff", s.handleAgBOMDiff)
	v1.Get("/namespaces/:ns/agents/:agent/agbom", s.handleAgBOMGet)
}

// AgBOM returns the AgBOM service, for the job queue to bind.
func (s *Server) AgBOM() *agbom.Service { return s.agbom }

// agbomTarget resolves the namespace of an AgBOM call (the path's, else
// ?namespace=, else the credential's, else "default"), authorizes verb on
// it and fills the audit record.
func (s *Server) agbomTarget(c *fiber.Ctx, verb string) (ns, agent string, err error) {
	p := principal(c)
	agent = c.Params("agent")
	ns = c.Params("ns")
	if ns == "" {
		ns = c.Query("namespace")
	}
	if ns == "" && p.Namespace != auth.AllNamespaces {
		ns = p.Namespace
	}
	if ns == "" {
		ns = resource.DefaultNamespace
	}
	a := auditOf(c)
	a.verb, a.namespace, a.resource = verb, ns, "agbom/"+agent
	if err := s.check(c, verb, ns, agbomObject); err != nil {
		return "", "", err
	}
	return ns, agent, nil
}

// generationQuery reads a generation parameter; 0 when absent.
func generationQuery(c *fiber.Ctx, name string) (int64, error) {
	v := c.Query(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest("%s must be a generation (a positive integer), got %q", name, v)
	}
	return n, nil
}

// handleAgBOMGet serves GET /v1/agbom/{agent}?format=&generation= and
// GET /v1/namespaces/{ns}/agents/{agent}/agbom.
func (s *Server) handleAgBOMGet(c *fiber.Ctx) error {
	ns, agent, err := s.agbomTarget(c, auth.VerbGet)
	if err != nil {
		return err
	}
	format := c.Query("format", agbom.FormatCycloneDX)
	if !slices.Contains(agbom.Formats(), format) {
		return badRequest("format must be one of %s, got %q", strings.Join(agbom.Formats(), ", "), format)
	}
	gen, err := generationQuery(c, "generation")
	if err != nil {
		return err
	}
	b, err := s.agbom.Get(c.UserContext(), principal(c).Tenant, ns, agent, gen)
	if err != nil {
		return agbomError(err)
	}
	doc, err := agbom.Render(b, format)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, agbom.ContentType(format))
	return c.Send(doc)
}

// handleAgBOMRefresh serves POST /v1/agbom/{agent}/refresh?generation=.
func (s *Server) handleAgBOMRefresh(c *fiber.Ctx) error {
	ns, agent, err := s.agbomTarget(c, auth.VerbApply)
	if err != nil {
		return err
	}
	gen, err := generationQuery(c, "generation")
	if err != nil {
		return err
	}
	b, updated, err := s.agbom.Refresh(c.UserContext(), principal(c).Tenant, ns, agent, gen, "")
	if err != nil {
		return agbomError(err)
	}
	return c.JSON(agbom.RefreshResult{Namespace: b.Namespace, Agent: b.Agent, Generation: b.Generation,
		Manifest: b.Manifest, Revision: b.Revision, Updated: updated})
}

// handleAgBOMDiff serves GET /v1/agbom/{agent}/diff?from=&to=.
func (s *Server) handleAgBOMDiff(c *fiber.Ctx) error {
	ns, agent, err := s.agbomTarget(c, auth.VerbGet)
	if err != nil {
		return err
	}
	from, err := generationQuery(c, "from")
	if err != nil {
		return err
	}
	to, err := generationQuery(c, "to")
	if err != nil {
		return err
	}
	d, err := s.agbom.Diff(c.UserContext(), principal(c).Tenant, ns, agent, from, to)
	if err != nil {
		return agbomError(err)
	}
	return c.JSON(d)
}

// agbomError maps the AgBOM service's errors onto API errors.
func agbomError(err error) error {
	msg := func(sentinel error) string {
		return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
	}
	switch {
	case errors.Is(err, agbom.ErrNotFound):
		return apierr.New(apierr.CodeNotFound, "%s", msg(agbom.ErrNotFound))
	case errors.Is(err, agbom.ErrInvalid):
		return apierr.New(apierr.CodeInvalidRequest, "%s", msg(agbom.ErrInvalid))
	}
	return storeError(err)
}
