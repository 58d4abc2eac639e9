package authz_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
)

func TestAuthorizeDecisionRefusesTheRequester(t *testing.T) {
	t.Parallel()
	r := authz.Requester{Namespace: "team-a", Agent: "bot", Subject: "apikey:bot-key"}
	person := authz.Requester{Namespace: "team-a", Agent: "bot", Subject: "user:ann@example.com"}
	tests := []struct {
		name    string
		req     authz.Requester
		p       auth.Principal
		refused bool
	}{
		{"the agent's workload token", r, auth.Principal{Kind: auth.KindAgent, Subject: "agent:team-a/bot", Agent: "bot", Namespace: "team-a"}, true},
		{"another key bound to the agent", r, auth.Principal{Kind: auth.KindAPIKey, Subject: "apikey:other", Agent: "bot", Namespace: "team-a", Role: auth.RoleApprover}, true},
		{"the requesting key", r, auth.Principal{Kind: auth.KindAPIKey, Subject: "apikey:bot-key", Namespace: "team-a", Role: auth.RoleAdmin}, true},
		{"the requesting person by e-mail", person, auth.Principal{Kind: auth.KindUser, Subject: "user:ANN@example.com", Email: "Ann@Example.com"}, true},
		{"an agent of the same name elsewhere", r, auth.Principal{Kind: auth.KindAgent, Subject: "agent:team-b/bot", Agent: "bot", Namespace: "team-b"}, false},
		{"another agent", r, auth.Principal{Kind: auth.KindAgent, Subject: "agent:team-a/reviewer", Agent: "reviewer", Namespace: "team-a"}, false},
		{"an approver", r, auth.Principal{Kind: auth.KindUser, Subject: "user:bob@example.com", Email: "bob@example.com"}, false},
		{"an older record without subject", authz.Requester{Namespace: "team-a", Agent: "bot"}, auth.Principal{Kind: auth.KindAPIKey, Subject: "apikey:admin", Namespace: "*", Role: auth.RoleOwner}, false},
		{"the system", r, auth.SystemPrincipal("acme"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := authz.AuthorizeDecision(tc.p, tc.req)
			if tc.refused {
				require.ErrorIs(t, err, auth.ErrForbidden)
			} else {
				require.NoError(t, err)
			}
		})
	}
}
