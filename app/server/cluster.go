package server

import (
	"context"

	"github.com/warden-dev/warden/jobs"
)

var _ jobs.ClusterRunner = (*Server)(nil)

// SweepApprovals resumes approved calls that never started, expires
// overdue approvals and ends interrupted calls that any replica left
// (gateway.Gateway.SweepPeriodic). It is the once-per-cluster sweep job's
// work, which only replicas with a tool gateway are given.
func (s *Server) SweepApprovals(ctx context.Context) error {
	if s.gateway == nil {
		return nil
	}
	return s.gateway.SweepPeriodic(ctx)
}

// background starts the work that runs on a timer: on this server alone
// without Config.Cluster, and otherwise once per cluster as jobs, which
// New bound to this server.
func (s *Server) background(ctx context.Context) {
	if s.cfg.Cluster != nil {
		return
	}
	go s.rotateSigningKeys(ctx)
	go s.retain(ctx)
}
