package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/warden-dev/warden/app/server"
)

// printLocalSignIn prints local mode's one-time console sign-in link: it
// signs the person at this machine in as the local owner, once, within
// ten minutes, on controlURL (a loopback address unless up listens
// elsewhere). A failure is logged; the CLI and API keys still work.
func printLocalSignIn(ctx context.Context, w io.Writer, srv *server.Server, controlURL string, logger *slog.Logger) {
	link, err := srv.LocalSignInLink(ctx, controlURL)
	if err != nil {
		logger.Error("local console sign-in link", "err", err)
		return
	}
	fmt.Fprintf(w, "Console sign-in (one-time link, this machine only, valid 10 minutes):\n  %s\n", link)
}
