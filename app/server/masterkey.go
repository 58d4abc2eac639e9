package server

import (
	"context"
	"time"

	"github.com/warden-dev/warden/app/secret"
)

// checkMasterKey refuses a master key that is not the installation's
// (secret.CheckMasterKey), before the signing-key issuer could replace the
// keys it cannot open. An ephemeral keyring (tests) is never checked.
func checkMasterKey(cfg Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return secret.CheckMasterKey(ctx, cfg.Store, cfg.Keyring)
}
