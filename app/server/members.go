package server

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/tenants"
)

// The tenant's people over the API: GET /v1/members, GET
// /v1/members/{email} and POST /v1/members/{email}/role. They call
// tenants.Service, as the console's members screen does, and app/authz
// decides who may read members and who may grant or take away ownership.

// memberRoutes mounts the members API on the authenticated /v1 group,
// before the generic tenant-scope routes that would take /members.
func (s *Server) memberRoutes(v1 fiber.Router) {
	v1.Get("/members", s.handleMemberList)
	v1.Get("/members/:email", s.handleMemberGet)
	v1.Post("/members/:email/role", s.handleMemberSetRole)
}

func memberView(m tenants.MemberRoles) api.Member {
	v := api.Member{APIVersion: resource.GroupVersion, Kind: "Member", Email: m.Email, Name: m.Name, Status: m.Status, Owner: m.Owner,
		Roles: make([]api.MemberRole, 0, len(m.Roles)), InvitedBy: m.InvitedBy, CreatedAt: m.CreatedAt.UTC()}
	for _, r := range m.Roles {
		v.Roles = append(v.Roles, api.MemberRole{Namespace: r.Namespace, Role: r.Role})
	}
	if m.LastLogin != nil {
		t := m.LastLogin.UTC()
		v.LastLogin = &t
	}
	return v
}

// emailParam is the {email} of the path, unescaped.
func emailParam(c *fiber.Ctx) (string, error) {
	e, err := url.PathUnescape(c.Params("email"))
	if err != nil || e == "" {
		return "", badRequest("the path names no e-mail address: /v1/members/{email}")
	}
	return strings.ToLower(strings.Clone(e)), nil
}

func (s *Server) handleMemberList(c *fiber.Ctx) error {
	a := auditOf(c)
	a.verb, a.resource = auth.VerbList, "members"
	ms, err := s.tenants.MembersWithRoles(c.UserContext(), principal(c))
	if err != nil {
		return err
	}
	out := api.MemberList{APIVersion: resource.GroupVersion, Kind: "MemberList", Items: make([]api.Member, 0, len(ms))}
	for _, m := range ms {
		out.Items = append(out.Items, memberView(m))
	}
	return c.JSON(out)
}

func (s *Server) handleMemberGet(c *fiber.Ctx) error {
	email, err := emailParam(c)
	if err != nil {
		return err
	}
	a := auditOf(c)
	a.verb, a.resource = auth.VerbGet, "members/"+email
	m, err := s.tenants.MemberWithRoles(c.UserContext(), principal(c), email)
	if err != nil {
		return err
	}
	return c.JSON(memberView(m))
}

// handleMemberSetRole changes a member's role (tenants.Service.SetRole)
// and answers the member as they now are.
func (s *Server) handleMemberSetRole(c *fiber.Ctx) error {
	email, err := emailParam(c)
	if err != nil {
		return err
	}
	a := auditOf(c)
	a.verb, a.resource = auth.VerbPatch, "members/"+email
	var req api.MemberRoleRequest
	if err := decodeStrict(c.Body(), &req, `a JSON object {"role": "owner|admin|editor|approver|viewer", "namespace": "…"}`); err != nil {
		return err
	}
	switch {
	case req.Role == "":
		return badRequest("role is required: owner, or one of viewer, approver, editor, admin")
	case req.Namespace == auth.AllNamespaces:
		return badRequest(`namespace "*" is not a namespace: a role is bound in one namespace; tenant-wide authority is ownership (role owner)`)
	case req.Role != auth.RoleOwner:
		a.namespace = req.Namespace
		if a.namespace == "" {
			a.namespace = tenants.DefaultNamespace
		}
	}
	m, err := s.tenants.SetRole(c.UserContext(), principal(c), email, req.Role, req.Namespace)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(memberView(m))
}
