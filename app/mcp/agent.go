package mcp

import (
	"net/http"

	"github.com/warden-dev/warden/app/apierr"
)

type agentServers struct{ s *Service }

func newAgentServers(s *Service) *agentServers { return &agentServers{s: s} }
func (a *agentServers) invalidate(string)      {}
func (a *agentServers) close()                 {}

func (a *agentServers) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apierr.New(apierr.CodeUnavailable, "not yet"))
	})
}
