package server

import (
	"context"
	"time"
)

// keyRotationCheck is how often the server asks whether the workload signing
// key is due for rotation (the key's maximum age is far longer).
const keyRotationCheck = 10 * time.Minute

// rotateSigningKeys rotates the workload-identity signing key whenever it is
// due, until ctx ends. Every replica may run it: the issuer re-reads keys
// from the store and only rotates a key that is past its age, and tokens of
// the retired key keep verifying for the verify window, so rotation never
// breaks a live token.
func (s *Server) rotateSigningKeys(ctx context.Context) {
	every(ctx, keyRotationCheck, func() {
		if rotated, err := s.issuer.RotateIfDue(ctx); err != nil {
			s.log.WarnContext(ctx, "rotate workload signing key", "err", err)
		} else if rotated {
			s.log.InfoContext(ctx, "rotated workload signing key")
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
