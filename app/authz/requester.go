package authz

import (
	"fmt"
	"strings"

	"github.com/warden-dev/warden/app/auth"
)

// Requester is who asked for a tool call or an approval: the agent the call
// ran as and the credential that made the request (a workload token, an
// agent-bound API key, a person).
type Requester struct {
	// Namespace and Agent name the agent the call ran as.
	Namespace string
	Agent     string
	// Subject is the requesting credential's audit subject
	// ("agent:<ns>/<agent>", "apikey:<name>", "user:<e-mail>"); empty for
	// records written before it was kept.
	Subject string
}

// Requested reports whether p is, or acts for, the requester r: the agent
// itself (its workload token or any API key bound to it) or the very
// credential or person that made the request.
func (r Requester) Requested(p auth.Principal) bool {
	if p.System {
		return false
	}
	if r.Agent != "" && p.Agent == r.Agent && (p.Namespace == r.Namespace || p.Namespace == auth.AllNamespaces) {
		return true
	}
	if r.Agent != "" && p.Subject == AgentSubject(r.Namespace, r.Agent) {
		return true
	}
	if r.Subject == "" {
		return false
	}
	if p.Subject == r.Subject {
		return true
	}
	if email, ok := strings.CutPrefix(r.Subject, "user:"); ok && p.Email != "" && strings.EqualFold(p.Email, email) {
		return true
	}
	return false
}

// AuthorizeDecision is the separation-of-duties rule of approvals: whoever
// requested a call (r) never decides its approval (approve, deny or
// break-glass override), whatever role bindings they hold. It returns an
// error wrapping auth.ErrForbidden when p is the requester. The role check
// itself is Authorize(ObjApprovalsDecide or ObjApprovalsOverride); callers
// ask both.
func AuthorizeDecision(p auth.Principal, r Requester) error {
	if r.Requested(p) {
		who := r.Subject
		if who == "" {
			who = AgentSubject(r.Namespace, r.Agent)
		}
		return fmt.Errorf("%w: %s requested this call (as %s) and may not decide its approval", auth.ErrForbidden, p.Subject, who)
	}
	return nil
}
