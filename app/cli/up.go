package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/agbom"
	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/execution"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/postgres"
	"github.com/warden-dev/warden/jobs"
)

// defaultControlPort is the control plane's port (docs/operations.md lists
// all).
const defaultControlPort = 8080

// defaultGatewayPort is the tool gateway's port.
const defaultGatewayPort = 8081

// defaultMCPPort is the MCP gateway's port.
const defaultMCPPort = 8082

// defaultRouterPort is the model router's port.
const defaultRouterPort = 8083

func newUpCmd(a *app) *cobra.Command {
	var dataDir, storeURL, listenHost string
	var port, gatewayPort, changeHistory int
	var mcpPort int
	var mem memoryOptions
	routerPort := defaultRouterPort
	var tlsOpts tlsOptions
	var people peopleOptions
	var ragOpts ragOptions
	var traceOpts traceOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start Warden locally: every service in one process on the embedded store",
		Long: `Up opens the store (by default the embedded SQLite database in the data
directory), applies pending migrations, and serves until interrupted.

On the first start it creates tenant "default", namespace "default", the
environments dev, staging and prod, and an admin API key, which it writes to
$WARDEN_HOME/config.yaml as the context "local" and makes current.

Without --oidc-issuer nobody signs in to the console (local mode): people use
the CLI and API keys. With it, people sign in through that OpenID Connect
provider (code flow with PKCE) and may also present its ID tokens as bearer
tokens. Register <public URL>/auth/callback as the redirect URL there.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 1 || port > 65535 {
				return usagef("--port %d is not a TCP port (1-65535)", port)
			}
			if gatewayPort < 0 || gatewayPort > 65535 || gatewayPort == port {
				return usagef("--gateway-port %d is not a TCP port (1-65535, 0 for no gateway) other than --port", gatewayPort)
			}
			if mem.port < 0 || mem.port > 65535 || mem.port == port || (mem.port != 0 && (mem.port == gatewayPort || mem.port == mcpPort)) {
				return usagef("--memory-port %d is not a TCP port (1-65535, 0 for no memory service) other than --port, --gateway-port and --mcp-port", mem.port)
			}
			if routerPort < 0 || routerPort > 65535 || routerPort == port || routerPort != 0 && (routerPort == gatewayPort || routerPort == mcpPort || routerPort == mem.port) {
				return usagef("--router-port %d is not a TCP port (1-65535, 0 for no router) other than --port, --gateway-port, --mcp-port and --memory-port", routerPort)
			}
			if (tlsOpts.cert == "") != (tlsOpts.key == "") {
				return usagef("--tls-cert and --tls-key go together")
			}
			addr := net.JoinHostPort(listenHost, strconv.Itoa(port))
			if err := server.CheckTransport(addr, tlsOpts.cert != "", tlsOpts.allowPlaintext); err != nil {
				return usagef("%s", err.Error())
			}
			if changeHistory == 0 || changeHistory < -1 {
				return usagef("--change-history %d must be a number of entries, or -1 to keep them all", changeHistory)
			}
			if people.signupsPerHour < 1 {
				return usagef("--signups-per-hour %d must be at least 1", people.signupsPerHour)
			}
			if people.issuer == "" && (people.clientID != "" || people.clientSecret != "") {
				return usagef("--oidc-client-id and --oidc-client-secret need --oidc-issuer")
			}
			if people.signup && people.issuer == "" {
				return usagef("--signup needs --oidc-issuer: a new tenant's owner proves their e-mail address by signing in there")
			}
			if people.issuer != "" && people.clientID == "" {
				return usagef("--oidc-issuer needs --oidc-client-id")
			}
			if people.publicURL != "" {
				if u, err := url.Parse(people.publicURL); err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
					return usagef("--public-url %q must be an absolute http(s) URL", people.publicURL)
				}
			}
			if mcpPort < 0 || mcpPort > 65535 || mcpPort != 0 && (mcpPort == port || mcpPort == gatewayPort) {
				return usagef("--mcp-port %d is not a TCP port (1-65535, 0 for no MCP gateway) other than --port and --gateway-port", mcpPort)
			}
			if gatewayPort == 0 {
				mcpPort = 0 // MCP calls are governed by the tool gateway
			}
			a.mcpPort = mcpPort
			if ragOpts.port < 0 || ragOpts.port > 65535 || ragOpts.port != 0 && (ragOpts.port == port || ragOpts.port == gatewayPort || ragOpts.port == mcpPort) {
				return usagef("--rag-port %d is not a TCP port (1-65535, 0 for no RAG service) other than --port, --gateway-port and --mcp-port", ragOpts.port)
			}
			a.memoryPort = mem.port
			if err := traceOpts.check(port, gatewayPort, mcpPort, mem.port); err != nil {
				return err
			}
			return a.up(cmd.Context(), dataDir, storeURL, listenHost, port, gatewayPort, routerPort, changeHistory, tlsOpts, people, traceOpts, ragOpts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "directory of the embedded store (default $WARDEN_HOME, i.e. ~/.warden)")
	f.StringVar(&storeURL, "store", "", "store URL: sqlite://PATH or postgres://… (default sqlite://<data-dir>/warden.db)")
	f.StringVar(&listenHost, "listen-host", "127.0.0.1", "address the listeners bind to; 0.0.0.0 exposes Warden to the network")
	f.IntVar(&port, "port", defaultControlPort, "port of the control plane API")
	f.IntVar(&gatewayPort, "gateway-port", defaultGatewayPort, "port of the tool gateway (0: no gateway)")
	f.IntVar(&ragOpts.port, "rag-port", defaultRAGPort, "port of the RAG service (0: no RAG service)")
	f.StringVar(&ragOpts.fileRoot, "rag-file-root", "", "directory KnowledgeSources of type file are read under (default <data-dir>/knowledge)")
	f.StringVar(&ragOpts.embeddingsURL, "rag-embeddings-url", "", "OpenAI-compatible base URL whose /v1/embeddings embeds indexes that name a model (default: none, BM25)")
	f.IntVar(&mcpPort, "mcp-port", defaultMCPPort, "port of the MCP gateway (0: no MCP gateway)")
	f.IntVar(&mem.port, "memory-port", defaultMemoryPort, "port of the memory service (0: no memory service)")
	f.IntVar(&routerPort, "router-port", defaultRouterPort, "port of the model router (0: no router)")
	f.IntVar(&changeHistory, "change-history", server.DefaultChangeHistory, "change-log entries each tenant keeps for watchers that resume (-1: all)")
	f.StringVar(&tlsOpts.cert, "tls-cert", "", "PEM certificate (chain) to serve every listener over TLS")
	f.StringVar(&tlsOpts.key, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&tlsOpts.allowPlaintext, "insecure-allow-plaintext", false, "serve plaintext HTTP on a non-loopback address (only behind a TLS-terminating proxy)")
	f.StringVar(&people.issuer, "oidc-issuer", "", "OpenID Connect issuer URL people sign in to the console with (none: local mode, API keys only)")
	f.StringVar(&people.clientID, "oidc-client-id", "", "Warden's client id at --oidc-issuer")
	f.StringVar(&people.clientSecret, "oidc-client-secret", "", "client secret at --oidc-issuer (prefer $"+envOIDCClientSecret+"; empty for a public PKCE client)")
	f.StringVar(&people.name, "oidc-name", "Single sign-on", "label of the sign-in button")
	f.StringVar(&people.publicURL, "public-url", "", "externally visible base URL: the OIDC redirect URL is <public-url>/auth/callback and workload tokens name it as issuer (default the control plane URL)")
	f.BoolVar(&people.signup, "signup", false, "enable self-service tenant sign-up in the console (SaaS)")
	f.IntVar(&people.signupsPerHour, "signups-per-hour", server.DefaultSignupsPerHour, "sign-ups one client IP may post an hour (with --signup)")
	traceOpts.addFlags(f)
	return cmd
}

// Environment variables of up's secrets.
const (
	envOIDCClientSecret = "WARDEN_OIDC_CLIENT_SECRET"
	envCookieKey        = "WARDEN_COOKIE_KEY"
	// cookieKeyFile in $WARDEN_HOME signs the console's sign-in flow cookie.
	cookieKeyFile = "cookie.key"
)

// peopleOptions are up's people sign-in flags, and serve's.
type peopleOptions struct {
	issuer, clientID, clientSecret, name, publicURL string
	signup                                          bool
	signupsPerHour                                  int
	// bearerOnly says no console runs (serve): people's ID tokens are
	// verified as bearer tokens, and no sign-in cookie is ever set.
	bearerOnly bool
}

// oidcConfig builds people sign-in from the flags; nil without an issuer.
// The client secret comes from the flag or the environment and is never
// printed.
func (a *app) oidcConfig(home, publicURL string, tlsOn bool, o peopleOptions) (*oidc.Config, error) {
	if o.issuer == "" {
		return nil, nil
	}
	secretValue := o.clientSecret
	if secretValue == "" {
		secretValue, _ = a.env.LookupEnv(envOIDCClientSecret)
	}
	var key []byte
	if !o.bearerOnly {
		var err error
		if key, err = loadCookieKey(a.env.LookupEnv, filepath.Join(home, cookieKeyFile)); err != nil {
			return nil, err
		}
	}
	name := o.name
	if name == "" {
		name = "Single sign-on"
	}
	return &oidc.Config{
		Issuers:      []oidc.IssuerConfig{{Name: name, IssuerURL: o.issuer, ClientID: o.clientID, ClientSecret: secretValue}},
		RedirectURL:  strings.TrimSuffix(publicURL, "/") + "/auth/callback",
		CookieSecure: tlsOn || strings.HasPrefix(publicURL, "https://"),
		CookieKey:    key,
	}, nil
}

// loadCookieKey reads the cookie signing key from $WARDEN_COOKIE_KEY
// (base64 or hex of at least 32 bytes) or from file, which it creates (mode
// 0600, 32 random bytes) when missing.
func loadCookieKey(env func(string) (string, bool), file string) ([]byte, error) {
	if v, ok := env(envCookieKey); ok && strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		for _, dec := range []func(string) ([]byte, error){base64.StdEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString} {
			if b, err := dec(v); err == nil && len(b) >= 32 {
				return b, nil
			}
		}
		return nil, fmt.Errorf("%s: must be base64 or hex of at least 32 bytes", envCookieKey)
	}
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		if len(b) < 32 {
			return nil, fmt.Errorf("cookie key %s: holds %d bytes, needs at least 32; delete it to make a new one", file, len(b))
		}
		return b, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cookie key: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("cookie key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, fmt.Errorf("cookie key: %w", err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, fmt.Errorf("write cookie key: %w", err)
	}
	return b, nil
}

// tlsOptions are up's transport flags.
type tlsOptions struct {
	cert, key      string
	allowPlaintext bool
}

func (a *app) up(ctx context.Context, dataDir, storeURL, listenHost string, port, gatewayPort, routerPort, changeHistory int, tlsOpts tlsOptions, people peopleOptions, traceOpts traceOptions, ragOpts ragOptions) error {
	listeners, err := bindListeners(listenHost, port, gatewayPort, routerPort)
	if err != nil {
		return err
	}
	spec := processSpec{listeners: listeners, listenHost: listenHost, tls: tlsOpts, people: people,
		changeHistory: changeHistory, trace: traceOpts, ragOpts: ragOpts, gateway: gatewayPort != 0}
	// Until buildProcess owns them, the listeners are closed here.
	built := false
	defer func() {
		if !built {
			listeners.Close()
			spec.rag.close()
			if spec.memLn != nil {
				_ = spec.memLn.Close()
			}
		}
	}()
	if a.mcpPort != 0 {
		spec.mcpAddr = net.JoinHostPort(listenHost, strconv.Itoa(a.mcpPort))
		if err := listeners.BindMCP(spec.mcpAddr); err != nil {
			return err
		}
		spec.mcpURL = spec.serviceURL(a.mcpPort)
	}
	if spec.rag, err = bindRAG(listenHost, ragOpts); err != nil {
		return err
	}
	if spec.memLn, err = bindMemory(listenHost, a.memoryPort); err != nil {
		return err
	}
	if a.memoryPort != 0 {
		spec.memoryURL = spec.serviceURL(a.memoryPort)
	}
	if gatewayPort != 0 {
		spec.gatewayAddr = net.JoinHostPort(listenHost, strconv.Itoa(gatewayPort))
		spec.gatewayURL = spec.serviceURL(gatewayPort)
	}
	routerURL := ""
	if routerPort != 0 {
		spec.routerAddr = net.JoinHostPort(listenHost, strconv.Itoa(routerPort))
		routerURL = spec.serviceURL(routerPort)
	}
	// A certificate pair that does not load fails before the data
	// directory is made, like a busy port.
	if _, err := tlsOpts.config(); err != nil {
		return err
	}
	if spec.home, err = clientconfig.Home(a.env.LookupEnv); err != nil {
		return err
	}
	home := spec.home
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
	spec.dataDir, spec.storeURL = dataDir, storeURL
	spec.controlURL = spec.serviceURL(port)
	spec.publicURL = spec.controlURL
	if people.publicURL != "" {
		spec.publicURL = strings.TrimSuffix(people.publicURL, "/")
	}
	w := a.env.Stdout
	spec.setup = func(ctx context.Context, st store.Store) error {
		return a.firstStart(ctx, st, home, spec.controlURL)
	}
	built = true
	p, err := a.buildProcess(ctx, spec)
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.start(ctx); err != nil {
		return err
	}
	// Everything that logs while starting (migrations, the queue, the
	// sweep) has run: the summary comes last, just before serving.
	fmt.Fprintf(w, "Warden is starting.\n")
	fmt.Fprintf(w, "  control plane + console  %s\n", spec.controlURL)
	if spec.gatewayURL != "" {
		fmt.Fprintf(w, "  tool gateway             %s\n", spec.gatewayURL)
	}
	if spec.mcpURL != "" {
		fmt.Fprintf(w, "  MCP gateway              %s (per-agent endpoint %s/mcp)\n", spec.mcpURL, spec.mcpURL)
	}
	if spec.rag != nil {
		fmt.Fprintf(w, "  RAG                      %s\n", spec.rag.url)
	}
	if routerURL != "" {
		fmt.Fprintf(w, "  model router             %s\n", routerURL)
	}
	fmt.Fprintf(w, "  store                    %s\n", redactURL(storeURL))
	fmt.Fprintf(w, "  config                   %s\n", clientconfig.Path(home))
	fmt.Fprintf(w, "  runtime                  %s\n", p.tuned)
	if p.oidc != nil {
		fmt.Fprintf(w, "  console sign-in          %s (redirect URL %s)\n", people.issuer, p.oidc.RedirectURL)
	} else {
		fmt.Fprintf(w, "  console sign-in          %s\n", localSignIn(ctx, p.srv, spec.controlURL, p.log))
	}
	p.printCommon(w)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
	if err := p.serve(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintln(w, "Warden stopped.")
	}
	return nil
}

// firstStart creates, on the first start of the store, tenant "default"
// with its namespace and environments and an admin API key, which it
// saves as the current context "local" of the config in home.
func (a *app) firstStart(ctx context.Context, st store.Store, home, controlURL string) error {
	key, created, err := server.Bootstrap(ctx, st, a.env.Now)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if !created {
		return nil
	}
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
	w := a.env.Stdout
	fmt.Fprintf(w, "First start: created tenant \"default\", namespace \"default\", environments dev, staging, prod.\n")
	fmt.Fprintf(w, "Admin API key written to %s (context %q, now current).\n", clientconfig.Path(home), clientconfig.LocalContext)
	return nil
}

// printCommon prints the summary lines every process has: the sandbox,
// the trace listeners and exporter, the memory service.
func (p *process) printCommon(w io.Writer) {
	if p.sandboxErr != nil {
		fmt.Fprintf(w, "  OS tool sandbox          unavailable (%v)\n", p.sandboxErr)
	}
	for _, line := range p.traceSummary {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if p.traceEndpoint != "" {
		fmt.Fprintf(w, "  traces (OTLP/HTTP)       %s\n", p.traceEndpoint)
	}
	if p.spec.memLn != nil {
		fmt.Fprintf(w, "  memory                   %s\n", p.spec.memoryURL)
	}
}

// agbomQueue is where AgBOM refreshes go: River's default queue, which
// this process works only with the tool gateway (jobs.Cluster.Queues: the
// approval jobs need one), else nil, and the server refreshes in-process.
func agbomQueue(q *jobs.AgBOMs, gateway bool) agbom.Queue {
	if !gateway {
		return nil
	}
	return q
}

// executionQueue is where execution runs go: River's default queue when
// this process works it (with the tool gateway, which runs need), else
// nil, and the server runs them in-process.
func executionQueue(q *jobs.Executions, gateway bool) execution.Queue {
	if !gateway {
		return nil
	}
	return q
}

// stopQueue stops the job queue, giving running jobs 5 seconds, and never
// holds up the process's exit for more than 15.
func stopQueue(q *jobs.Queue, logger *slog.Logger) {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- q.Stop(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			logger.Error("stop job queue", "err", err)
		}
	case <-time.After(15 * time.Second):
		logger.Error("the job queue did not stop within 15s; exiting without it (unfinished jobs run again at the next start)")
	}
}

// openQueue opens the job queue on the store's database.
func openQueue(ctx context.Context, st store.Store, storeURL string, cfg jobs.Config) (*jobs.Queue, error) {
	if pg, ok := st.(*postgres.Store); ok {
		return jobs.OpenPostgres(ctx, storeURL, pg.Pool(), cfg)
	}
	path, ok := strings.CutPrefix(storeURL, "sqlite://")
	if !ok {
		return nil, fmt.Errorf("no job queue for store %s", redactURL(storeURL))
	}
	return jobs.OpenSQLite(ctx, path, cfg)
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
