package authz

import (
	"sort"

	"github.com/casbin/casbin/v2/util"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/resource"
)

// Roles beyond the four namespace roles and the tenant owner of package auth.
const (
	// RoleBreakGlass may override an approval decision
	// (approvals/override). It is never implied by another role, not even
	// admin or owner: it is bound deliberately, in a RoleBinding.
	RoleBreakGlass = "breakglass"
	// RoleAgent is the implicit role of a workload credential in its own
	// namespace: read its agents, tools and models, and call the gateway.
	RoleAgent = "agent"
)

// VerbCreate is the verb of action endpoints (POST): a tool call, an approval
// decision or override, a replay, a new API key or member.
const VerbCreate = "create"

// Objects that are not a kind's plural: sub-resources and endpoints with a
// permission of their own.
const (
	// ObjApprovalsDecide is POST …/approvals/{id}/decide and
	// POST /v1/tool-calls/{id}/approve.
	ObjApprovalsDecide = "approvals/decide"
	// ObjApprovalsOverride is the break-glass POST /v1/approvals/{id}/override.
	ObjApprovalsOverride = "approvals/override"
	// ObjToolCallsReplay re-runs a recorded tool call.
	ObjToolCallsReplay = "toolcalls/replay"
	// ObjToolCalls with VerbCreate is calling the tool gateway.
	ObjToolCalls = "toolcalls"
	// ObjModelCalls with VerbCreate is calling the model router.
	ObjModelCalls = "modelcalls"
	// ObjAPIKeys is API key management.
	ObjAPIKeys = "apikeys"
	// ObjMembers is the tenant's people.
	ObjMembers = "members"
	// ObjMembersOwner with VerbCreate grants or takes away ownership of
	// the tenant (POST /v1/members/{email}/role with role owner, or a
	// namespace role for an owner): owners only.
	ObjMembersOwner = "members/owner"
	// ObjAudit is the audit log.
	ObjAudit = "audit"
	// ObjResources is the change feed, GET /v1/resources?watch=true.
	ObjResources = "resources"
	// ObjRAGRetrieve with VerbCreate is a retrieval from a RAG index
	// (POST /v1/rag/{name}/retrieve): agents, and people who may read.
	ObjRAGRetrieve = "rag/retrieve"
	// ObjRAGIndex with VerbCreate triggers an index refresh (POST
	// /v1/rag/{name}/index): editors and above.
	ObjRAGIndex = "rag/index"
	// ObjTraces is the trace service: reading spans, metrics and OCSF
	// events (get, list) and sending them (create).
	ObjTraces = "traces"
	// ObjExecutions with VerbCreate is creating and running an execution.
	ObjExecutions = "executions"
	// ObjExecutionsCancel cancels an unfinished execution.
	ObjExecutionsCancel = "executions/cancel"
	// ObjExecutionsReplay replays the tool calls of an execution.
	ObjExecutionsReplay = "executions/replay"
	// ObjPromote is POST /v1/promote (the apply it makes is authorized
	// again as apply on deployments).
	ObjPromote = "promote"
	// ObjEvalRun is POST /v1/eval/{name}/run.
	ObjEvalRun = "eval/run"
	// ObjMemoryItems is the memory service's items: get (query), create
	// (write) and delete.
	ObjMemoryItems = "memoryitems"
	// ObjMemorySummarize with VerbCreate is a memory's summary pass.
	ObjMemorySummarize = "memoryitems/summarize"
)

// Permission is one (object, verb) pair a role allows.
type Permission struct {
	Object string
	Verb   string
}

// Roles returns every role of the matrix, least privileged first.
func Roles() []string {
	return []string{RoleAgent, auth.RoleViewer, auth.RoleEditor, auth.RoleApprover, auth.RoleAdmin, auth.RoleOwner, RoleBreakGlass}
}

// BindableRoles are the roles a RoleBinding may name. Owner comes from the
// tenant's members and agent from workload credentials, never from a
// binding.
func BindableRoles() []string {
	return []string{auth.RoleViewer, auth.RoleEditor, auth.RoleApprover, auth.RoleAdmin, RoleBreakGlass}
}

func isBindable(role string) bool {
	for _, r := range BindableRoles() {
		if r == role {
			return true
		}
	}
	return false
}

var (
	readVerbs  = []string{auth.VerbGet, auth.VerbList, auth.VerbWatch}
	writeVerbs = []string{auth.VerbApply, auth.VerbPatch, auth.VerbDelete}
)

// Object groups stand for several kinds in a policy line, so the Casbin
// policy stays short (Enforce scans policy lines one by one). objMatch
// expands them; Permissions lists them expanded.
const (
	groupNamespaced = "@namespaced" // every namespaced kind
	groupUserKinds  = "@userkinds"  // namespaced kinds users write: not system-only, not rolebindings
	groupTenant     = "@tenantkinds"
)

// groups maps each object group to its members.
var groups = func() map[string]map[string]bool {
	g := map[string]map[string]bool{groupNamespaced: {}, groupUserKinds: {}, groupTenant: {}}
	for _, k := range resource.Kinds() {
		switch {
		case !k.Namespaced:
			g[groupTenant][k.Plural] = true
		default:
			g[groupNamespaced][k.Plural] = true
			if !k.SystemOnly && k.Kind != resource.KindRoleBinding {
				g[groupUserKinds][k.Plural] = true
			}
		}
	}
	return g
}()

// rules returns role's policy as (object or group, verb) pairs; nil for an
// unknown role.
func rules(role string) []Permission {
	var out []Permission
	add := func(objs []string, verbs ...string) {
		for _, o := range objs {
			for _, v := range verbs {
				out = append(out, Permission{o, v})
			}
		}
	}
	viewer := func() {
		// Secrets read as metadata only (values never leave the server).
		add([]string{groupNamespaced}, readVerbs...)
		add([]string{ObjResources}, auth.VerbWatch)
		add([]string{ObjRAGRetrieve}, VerbCreate)
		add([]string{ObjMemoryItems}, auth.VerbGet)
		// Tenant-scope kinds live in domain "*": only a tenant-wide grant
		// reaches them.
		add([]string{groupTenant}, readVerbs...)
		add([]string{ObjTraces}, auth.VerbGet, auth.VerbList)
	}
	editor := func() {
		viewer()
		add([]string{groupUserKinds}, writeVerbs...)
		add([]string{ObjRAGIndex}, VerbCreate)
		add([]string{ObjTraces}, VerbCreate)
		add([]string{ObjExecutions, ObjExecutionsCancel, ObjPromote, ObjEvalRun}, VerbCreate)
		add([]string{ObjModelCalls}, VerbCreate)
		add([]string{ObjMemoryItems}, VerbCreate, auth.VerbDelete)
		add([]string{ObjMemorySummarize}, VerbCreate)
	}
	approver := func() {
		viewer()
		add([]string{ObjApprovalsDecide}, VerbCreate)
	}
	admin := func() {
		editor()
		approver()
		add([]string{groupNamespaced}, auth.VerbWriteStatus)
		add([]string{"rolebindings"}, writeVerbs...)
		add([]string{ObjAPIKeys}, auth.VerbGet, auth.VerbList, VerbCreate, auth.VerbDelete)
		add([]string{ObjToolCallsReplay}, VerbCreate)
		add([]string{ObjExecutionsReplay}, VerbCreate)
		add([]string{ObjAudit}, auth.VerbGet, auth.VerbList)
	}
	switch role {
	case RoleAgent:
		add([]string{"agents", "tools", "models"}, auth.VerbGet, auth.VerbList)
		add([]string{ObjToolCalls}, VerbCreate)
		add([]string{ObjRAGRetrieve}, VerbCreate)
		add([]string{ObjTraces}, VerbCreate)
		add([]string{ObjModelCalls}, VerbCreate)
		add([]string{ObjMemoryItems}, auth.VerbGet, VerbCreate, auth.VerbDelete)
		add([]string{ObjMemorySummarize}, VerbCreate)
	case auth.RoleViewer:
		viewer()
	case auth.RoleEditor:
		editor()
	case auth.RoleApprover:
		approver()
	case auth.RoleAdmin:
		admin()
	case auth.RoleOwner:
		admin()
		add([]string{groupTenant}, writeVerbs...)
		add([]string{groupTenant}, auth.VerbWriteStatus)
		add([]string{ObjMembers}, auth.VerbGet, auth.VerbList, VerbCreate, auth.VerbPatch, auth.VerbDelete)
		add([]string{ObjMembersOwner}, VerbCreate)
	case RoleBreakGlass:
		add([]string{"approvals", "toolcalls"}, auth.VerbGet, auth.VerbList)
		add([]string{ObjApprovalsOverride}, VerbCreate)
	default:
		return nil
	}
	// Deduplicate (approver and editor both bring viewer into admin).
	seen := map[Permission]bool{}
	uniq := out[:0]
	for _, p := range out {
		if !seen[p] {
			seen[p] = true
			uniq = append(uniq, p)
		}
	}
	return uniq
}

// Permissions returns what role allows, object groups expanded, sorted by
// object then verb; nil for an unknown role. This is the matrix of
// docs/authz.md.
func Permissions(role string) []Permission {
	rs := rules(role)
	if rs == nil {
		return nil
	}
	set := map[Permission]bool{}
	for _, r := range rs {
		if members, ok := groups[r.Object]; ok {
			for o := range members {
				set[Permission{o, r.Verb}] = true
			}
			continue
		}
		set[r] = true
	}
	out := make([]Permission, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Verb < out[j].Verb
	})
	return out
}

// objMatch is the matcher's object test: a group policy matches its
// members, anything else is Casbin's keyMatch ("*" wildcards; the built-in
// policy uses none, so no wildcard can ever reach approvals/override).
func objMatch(reqObj, policyObj string) bool {
	if members, ok := groups[policyObj]; ok {
		return members[reqObj]
	}
	return util.KeyMatch(reqObj, policyObj)
}

// roleSubject is the Casbin subject of a role; the prefix keeps role names
// apart from user, key and agent subjects.
func roleSubject(role string) string { return "role:" + role }

// policyLines returns the p lines of the whole matrix. Every role policy has
// domain "*": a role means the same in every namespace; where it applies is
// decided by the grant (g line).
func policyLines() [][]string {
	var lines [][]string
	for _, role := range Roles() {
		for _, p := range rules(role) {
			lines = append(lines, []string{"p", roleSubject(role), AllDomains, p.Object, p.Verb})
		}
	}
	return lines
}

// AllDomains is the Casbin domain of tenant-wide grants and of tenant-scope
// objects.
const AllDomains = "*"

// NamespaceRoles are the four namespace roles, least privileged first: what
// tenants/ and SSO sign-in bind people to, what an API key may be minted
// with and what the console offers. Break-glass is bound deliberately in a
// RoleBinding of its own, owner is a member flag, agent a workload's.
func NamespaceRoles() []string {
	return []string{auth.RoleViewer, auth.RoleApprover, auth.RoleEditor, auth.RoleAdmin}
}

// IsNamespaceRole reports whether role is one of NamespaceRoles.
func IsNamespaceRole(role string) bool {
	for _, r := range NamespaceRoles() {
		if r == role {
			return true
		}
	}
	return false
}

// Covers reports whether role a allows everything role b allows.
func Covers(a, b string) bool {
	have := map[Permission]bool{}
	for _, p := range Permissions(a) {
		have[p] = true
	}
	for _, p := range Permissions(b) {
		if !have[p] {
			return false
		}
	}
	return Permissions(a) != nil
}

// MostPrivileged returns the role of roles that allows the most, by the
// matrix: one that covers every other when there is one, else the one with
// the most permissions (editor before approver: neither covers the other).
// Unknown roles are ignored; "" when none is known.
func MostPrivileged(roles ...string) string {
	best := ""
	for _, r := range roles {
		if Permissions(r) == nil {
			continue
		}
		switch {
		case best == "":
			best = r
		case Covers(best, r):
		case Covers(r, best) || len(Permissions(r)) > len(Permissions(best)):
			best = r
		}
	}
	return best
}
