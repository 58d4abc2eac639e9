package cli

import (
	"context"
	"log/slog"

	"github.com/warden-dev/warden/app/server"
)

// localSignIn returns up's console sign-in line in local mode: a one-time
// link, on controlURL, that signs the person at this machine in as the
// local owner, once, within ten minutes. When no link can be made it says
// so, and the CLI and API keys still work.
func localSignIn(ctx context.Context, srv *server.Server, controlURL string, logger *slog.Logger) string {
	link, err := srv.LocalSignInLink(ctx, controlURL)
	if err != nil {
		logger.Error("local console sign-in link", "err", err)
		return "none (local mode: use the CLI and API keys; --oidc-issuer enables it)"
	}
	return link + " (local owner: once, from this machine, within 10 minutes)"
}
