package cli

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/clientconfig"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store/backend"
)

// A service `warden serve` runs alone, with its default port.
type serveService struct {
	name, title string
	port        int
}

// serveServices are the services `warden serve` runs, in the order of
// docs/operations.md's port table.
var serveServices = []serveService{
	{"gateway", "tool gateway", defaultGatewayPort},
	{"mcp", "MCP gateway", defaultMCPPort},
	{"router", "model router", defaultRouterPort},
	{"memory", "memory service", defaultMemoryPort},
	{"rag", "RAG service", defaultRAGPort},
	{"trace", "trace query + /metrics", defaultTracePort},
}

// serveOptions are serve's flags.
type serveOptions struct {
	storeURL, dataDir, listen, publicURL string
	migrate                              bool
	tls                                  tlsOptions
	trace                                traceOptions
	rag                                  ragOptions
	people                               peopleOptions
}

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	names := make([]string, len(serveServices))
	for i, s := range serveServices {
		names[i] = s.name
	}
	cmd := &cobra.Command{
		Use:   "serve " + strings.Join(names, "|"),
		Short: "Run one service alone against a shared Postgres store",
		Long: `Serve runs one service in this process, beside a control plane and other
services that run elsewhere on the same Postgres store (warden up
--store postgres://…, or other warden serve processes).

It does no first-start setup and applies no migration unless --migrate
says so: a schema that is behind this binary is refused, naming the
migrations it lacks. The embedded SQLite store belongs to one process and
is refused. The master key is the installation's: $WARDEN_MASTER_KEY, or
master.key in --data-dir; serve never creates one.

Manifests this process compiles name the other services on the host of
--listen at their default ports and the control plane at --public-url,
as warden up does.

With --oidc-issuer and --oidc-client-id (the same as the control plane's
warden up), the service also takes people's ID tokens from that issuer as
bearer tokens, as the control plane does; without them, workload tokens
and API keys only.`,
		Args:      exactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			i := slices.IndexFunc(serveServices, func(s serveService) bool { return s.name == args[0] })
			if i < 0 {
				return usagef("unknown service %q: choose one of %s", args[0], strings.Join(names, ", "))
			}
			return a.serve(cmd, serveServices[i], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.storeURL, "store", "", "the shared store, postgres://OWNER@HOST/DB (required)")
	f.StringVar(&o.listen, "listen", "", "HOST:PORT the service listens on (default 127.0.0.1 and the service's port)")
	f.BoolVar(&o.migrate, "migrate", false, "apply the store's pending migrations first")
	f.StringVar(&o.dataDir, "data-dir", "", "directory of the master key file master.key (default $WARDEN_HOME, i.e. ~/.warden)")
	f.StringVar(&o.publicURL, "public-url", "", "the control plane's externally visible URL, issuer of workload tokens (default http(s)://HOST:8080)")
	f.StringVar(&o.tls.cert, "tls-cert", "", "PEM certificate (chain) to serve over TLS")
	f.StringVar(&o.tls.key, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&o.tls.allowPlaintext, "insecure-allow-plaintext", false, "serve plaintext HTTP on a non-loopback address (only behind a TLS-terminating proxy)")
	f.IntVar(&o.trace.httpPort, "otlp-http-port", defaultOTLPHTTPPort, "trace: port of OTLP/HTTP and OCSF ingest (0: not served)")
	f.IntVar(&o.trace.grpcPort, "otlp-grpc-port", defaultOTLPGRPCPort, "trace: port of OTLP/gRPC ingest (0: not served)")
	f.StringVar(&o.rag.fileRoot, "rag-file-root", "", "rag: directory KnowledgeSources of type file are read under (default <data-dir>/knowledge)")
	f.StringVar(&o.rag.embeddingsURL, "rag-embeddings-url", "", "rag: OpenAI-compatible base URL whose /v1/embeddings embeds indexes that name a model")
	f.StringVar(&o.people.issuer, "oidc-issuer", "", "OpenID Connect issuer whose ID tokens people may call the service with (none: workload tokens and API keys only)")
	f.StringVar(&o.people.clientID, "oidc-client-id", "", "Warden's client id at --oidc-issuer: the audience its ID tokens must name")
	return cmd
}

// serveSpec checks serve's flags and binds the service's listener.
func (a *app) serveSpec(svc serveService, o serveOptions) (processSpec, error) {
	var spec processSpec
	switch {
	case o.storeURL == "":
		return spec, usagef("--store is required: the postgres:// URL of the store the other services share")
	case backend.Embedded(o.storeURL):
		return spec, usagef("--store %s is the embedded SQLite store, which one process owns: "+
			"run every service in that process with warden up, or share a postgres:// store", o.storeURL)
	case !strings.HasPrefix(o.storeURL, "postgres://") && !strings.HasPrefix(o.storeURL, "postgresql://"):
		return spec, usagef("--store %s: serve needs a shared postgres:// store", redactURL(o.storeURL))
	}
	if (o.tls.cert == "") != (o.tls.key == "") {
		return spec, usagef("--tls-cert and --tls-key go together")
	}
	if (o.people.issuer == "") != (o.people.clientID == "") {
		return spec, usagef("--oidc-issuer and --oidc-client-id go together: ID tokens are checked for that issuer and that audience")
	}
	o.people.bearerOnly = true
	addr := o.listen
	if addr == "" {
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(svc.port))
	}
	host, portText, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return spec, usagef("--listen %q is not HOST:PORT with a TCP port (1-65535)", o.listen)
	}
	if err := server.CheckTransport(addr, o.tls.cert != "", o.tls.allowPlaintext); err != nil {
		return spec, usagef("%s", err.Error())
	}
	spec = processSpec{storeURL: o.storeURL, noMigrate: !o.migrate, masterKeyMustExist: true, listenHost: host, tls: o.tls,
		listeners: &server.Listeners{}, ragOpts: o.rag, dataDir: o.dataDir, people: o.people}
	spec.controlURL = spec.serviceURL(defaultControlPort)
	spec.publicURL = spec.controlURL
	if o.publicURL != "" {
		if u, err := url.Parse(o.publicURL); err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
			return spec, usagef("--public-url %q must be an absolute http(s) URL", o.publicURL)
		}
		spec.publicURL = strings.TrimSuffix(o.publicURL, "/")
	}
	if svc.name == "trace" {
		o.trace.queryPort = port
		if err := o.trace.check(); err != nil {
			return spec, err
		}
		spec.trace = o.trace
		return spec, nil
	}
	// Only the trace service serves the trace listeners; every process
	// writes its own spans to the trace store.
	spec.trace = traceOptions{}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return spec, fmt.Errorf("cannot listen on %s for the %s: %w; is another program using port %d? Choose another address with --listen",
			addr, svc.title, err, port)
	}
	switch svc.name {
	case "gateway":
		spec.listeners.Gateway = ln
		spec.gateway, spec.gatewayAddr, spec.gatewayURL = true, addr, spec.serviceURL(port)
	case "mcp":
		// The MCP gateway's calls are governed by a tool gateway in this
		// process, which serves no port of its own.
		spec.listeners.MCP = ln
		spec.gateway, spec.gatewayAddr = true, net.JoinHostPort(host, strconv.Itoa(defaultGatewayPort))
		spec.mcpAddr, spec.mcpURL = addr, spec.serviceURL(port)
	case "router":
		spec.listeners.Router = ln
		spec.routerAddr = addr
	case "memory":
		spec.memLn, spec.memoryURL = ln, spec.serviceURL(port)
	case "rag":
		spec.rag = &ragService{ln: ln}
		spec.ragOpts.port = port
	}
	return spec, nil
}

// serve runs svc alone until the command's context ends.
func (a *app) serve(cmd *cobra.Command, svc serveService, o serveOptions) error {
	ctx := cmd.Context()
	home, err := clientconfig.Home(a.env.LookupEnv)
	if err != nil {
		return err
	}
	if o.dataDir == "" {
		o.dataDir = home
	}
	spec, err := a.serveSpec(svc, o)
	if err != nil {
		return err
	}
	spec.home = home
	p, err := a.buildProcess(ctx, spec)
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.start(ctx); err != nil {
		return err
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "Warden is starting the %s alone.\n", svc.title)
	switch {
	case spec.listeners.Gateway != nil:
		fmt.Fprintf(w, "  tool gateway             %s\n", spec.gatewayURL)
	case spec.mcpURL != "":
		fmt.Fprintf(w, "  MCP gateway              %s (per-agent endpoint %s/mcp)\n", spec.mcpURL, spec.mcpURL)
	case spec.routerAddr != "":
		fmt.Fprintf(w, "  model router             %s\n", spec.serviceURL(spec.listeners.Router.Addr().(*net.TCPAddr).Port))
	case spec.rag != nil:
		fmt.Fprintf(w, "  RAG                      %s\n", spec.rag.url)
	}
	p.printCommon(w)
	fmt.Fprintf(w, "  control plane (issuer)   %s\n", spec.publicURL)
	if spec.people.issuer != "" {
		fmt.Fprintf(w, "  people's ID tokens       %s (audience %s)\n", spec.people.issuer, spec.people.clientID)
	}
	fmt.Fprintf(w, "  store                    %s\n", redactURL(spec.storeURL))
	fmt.Fprintf(w, "  runtime                  %s\n", p.tuned)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
	if err := p.serve(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "The %s stopped.\n", svc.title)
	return nil
}
