package server

import (
	"context"
	"fmt"
	"time"
)

// keyRotationCheck is how often a server without Config.Cluster asks
// whether the workload signing key is due for rotation (the key's maximum
// age is far longer).
const keyRotationCheck = 10 * time.Minute

// RotateSigningKeys rotates the workload-identity signing key if it is due.
// It is the once-per-cluster rotation job's work (jobs.Cluster); two
// replicas running it at once still rotate once (workload.Issuer.Rotate),
// and tokens of the retired key keep verifying for the verify window, so
// rotation never breaks a live token.
func (s *Server) RotateSigningKeys(ctx context.Context) error {
	rotated, err := s.issuer.RotateIfDue(ctx)
	if err != nil {
		return fmt.Errorf("rotate workload signing key: %w", err)
	}
	if rotated {
		s.log.InfoContext(ctx, "rotated workload signing key")
	}
	return nil
}

// rotateSigningKeys runs RotateSigningKeys every keyRotationCheck until ctx
// ends: the single server's loop when there is no Config.Cluster.
func (s *Server) rotateSigningKeys(ctx context.Context) {
	every(ctx, keyRotationCheck, func() {
		if err := s.RotateSigningKeys(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "rotate workload signing key", "err", err)
		}
	})
}

// every calls fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
