package mcp

import "github.com/warden-dev/warden/app/sandbox"

// StdioProcess returns the process this replica runs for a stdio server,
// nil when it runs none (or it is restarting).
func (s *Service) StdioProcess(tenant, ns, name string) *sandbox.Process {
	return s.stdio.running(stdioKey{tenant, ns, name})
}
