package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
)

// defaultControlPort is the control plane's port (docs/operations.md lists
// all).
const defaultControlPort = 8080

func newUpCmd(a *app) *cobra.Command {
	var dataDir, storeURL, listenHost string
	var port int
	var tlsOpts tlsOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start Warden locally: every service in one process on the embedded store",
		Long: `Up opens the store (by default the embedded SQLite database in the data
directory), applies pending migrations, and serves until interrupted.

On the first start it creates tenant "default", namespace "default", the
environments dev, staging and prod, and an admin API key, which it writes to
$WARDEN_HOME/config.yaml as the context "local" and makes current.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 1 || port > 65535 {
				return usagef("--port %d is not a TCP port (1-65535)", port)
			}
			if (tlsOpts.cert == "") != (tlsOpts.key == "") {
				return usagef("--tls-cert and --tls-key go together")
			}
			addr := net.JoinHostPort(listenHost, strconv.Itoa(port))
			if err := server.CheckTransport(addr, tlsOpts.cert != "", tlsOpts.allowPlaintext); err != nil {
				return usagef("%s", err.Error())
			}
			return a.up(cmd.Context(), dataDir, storeURL, listenHost, port, tlsOpts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "directory of the embedded store (default $WARDEN_HOME, i.e. ~/.warden)")
	f.StringVar(&storeURL, "store", "", "store URL: sqlite://PATH or postgres://… (default sqlite://<data-dir>/warden.db)")
	f.StringVar(&listenHost, "listen-host", "127.0.0.1", "address the listeners bind to; 0.0.0.0 exposes Warden to the network")
	f.IntVar(&port, "port", defaultControlPort, "port of the control plane API")
	f.StringVar(&tlsOpts.cert, "tls-cert", "", "PEM certificate (chain) to serve every listener over TLS")
	f.StringVar(&tlsOpts.key, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&tlsOpts.allowPlaintext, "insecure-allow-plaintext", false, "serve plaintext HTTP on a non-loopback address (only behind a TLS-terminating proxy)")
	return cmd
}

// tlsOptions are up's transport flags.
type tlsOptions struct {
	cert, key      string
	allowPlaintext bool
}

func (a *app) up(ctx context.Context, dataDir, storeURL, listenHost string, port int, tlsOpts tlsOptions) error {
	home, err := clientconfig.Home(a.env.LookupEnv)
	if err != nil {
		return err
	}
	if dataDir == "" {
		dataDir = home
	}
	if storeURL == "" {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return fmt.Errorf("data directory %s: %w", dataDir, err)
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
		storeURL = "sqlite://" + filepath.Join(abs, "warden.db")
	}
	logger := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	masterKey, err := secret.LoadMasterKey(a.env.LookupEnv, filepath.Join(dataDir, secret.MasterKeyFileName))
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}
	keyring, err := secret.NewKeyring(masterKey)
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}

	st, err := backend.Open(ctx, storeURL, backend.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("open store %s: %w", redactURL(storeURL), err)
	}
	defer st.Close()

	key, created, err := server.Bootstrap(ctx, st, a.env.Now)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	controlPort := strconv.Itoa(port)
	scheme := "http"
	if tlsOpts.cert != "" {
		scheme = "https"
	}
	controlURL := scheme + "://" + net.JoinHostPort(clientHost(listenHost), controlPort)
	w := a.env.Stdout
	if created {
		cfg, err := clientconfig.Load(home)
		if err != nil {
			return fmt.Errorf("load config: %w", err)
		}
		cfg.SetContext(clientconfig.Context{
			Name: clientconfig.LocalContext, Server: controlURL, Token: key, Namespace: clientconfig.DefaultNamespace,
		})
		if err := cfg.UseContext(clientconfig.LocalContext); err != nil {
			return err
		}
		if err := clientconfig.Save(home, cfg); err != nil {
			return fmt.Errorf("save config: %w", err)
		}
		fmt.Fprintf(w, "First start: created tenant \"default\", namespace \"default\", environments dev, staging, prod.\n")
		fmt.Fprintf(w, "Admin API key written to %s (context %q, now current).\n", clientconfig.Path(home), clientconfig.LocalContext)
	}
	fmt.Fprintf(w, "Warden is starting.\n")
	fmt.Fprintf(w, "  control plane + console  %s\n", controlURL)
	fmt.Fprintf(w, "  store                    %s\n", redactURL(storeURL))
	fmt.Fprintf(w, "  config                   %s\n", clientconfig.Path(home))
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")

	err = server.Run(ctx, server.Config{
		Store:          st,
		Logger:         logger,
		ControlAddr:    net.JoinHostPort(listenHost, controlPort),
		TLSCertFile:    tlsOpts.cert,
		TLSKeyFile:     tlsOpts.key,
		Keyring:        keyring,
		PublicURL:      controlURL,
		AllowPlaintext: tlsOpts.allowPlaintext,
		Now:            a.env.Now,
	})
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		fmt.Fprintln(w, "Warden stopped.")
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// clientHost is the host a local client dials to reach a listener bound
// to host: the loopback address for wildcard binds.
func clientHost(host string) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	return host
}

// redactURL hides a password in a store URL before it is printed.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}
