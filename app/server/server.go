// Package server wires Warden's services onto their listeners: the control
// plane's resource API (apply, validate, diff, CRUD, watch) with
// authentication, role checks and an audit record for every call.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/warden-dev/warden/app/adapter"
	"github.com/warden-dev/warden/app/agbom"
	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/compile"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/execution"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/mcp"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/router"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/watch"
	"github.com/warden-dev/warden/app/workload"
	"github.com/warden-dev/warden/jobs"
	"github.com/warden-dev/warden/tenants"
	"github.com/warden-dev/warden/web"
)

// MaxBodyBytes is the largest request body any endpoint accepts (10 MiB).
const MaxBodyBytes = 10 << 20

// Config configures a Warden process.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// ControlAddr is the control plane listener, e.g. "127.0.0.1:8080";
	// ControlOff serves no control plane (a service run alone, `warden
	// serve`), which then needs PublicURL.
	ControlAddr string
	// Compile holds the endpoints compiled manifests point agents at.
	Compile compile.Options
	// Adapters receive compiled manifests; nil means the local adapter.
	Adapters *adapter.Registry
	// TLSCertFile and TLSKeyFile serve the listener over TLS (both or
	// neither).
	TLSCertFile string
	TLSKeyFile  string
	// AllowPlaintext lets a listener off loopback serve without TLS. Without
	// it the server refuses to start there.
	AllowPlaintext bool
	// Keyring seals Secret values and workload signing keys. New refuses
	// one whose master key is not the store's installation's
	// (secret.CheckMasterKey). nil means an ephemeral random master key
	// (tests): secrets then do not survive a restart, and a warning is
	// logged.
	Keyring *secret.Keyring
	// PublicURL is the control plane's externally visible base URL, the
	// issuer of workload tokens; default http://<ControlAddr>.
	PublicURL string
	// Kubernetes lists clusters whose service-account tokens may be
	// exchanged for workload tokens.
	Kubernetes []workload.KubernetesIssuer
	// BookmarkInterval is how often an idle watch stream gets a BOOKMARK
	// (default 15s); it also detects clients that went away.
	BookmarkInterval time.Duration
	// OIDC configures people sign-in (console code flow, ID tokens as
	// bearer tokens, console sessions on /v1); nil means none: local mode,
	// where people use API keys and the CLI.
	OIDC *oidc.Config
	// Signup enables self-service tenant sign-up in the console (SaaS).
	Signup bool
	// LocalSignIn, without OIDC, lets the person at the machine into the
	// console as the local owner through one-time links
	// (Server.LocalSignInLink, printed by `warden up`).
	LocalSignIn bool
	// SignupLimit is how many sign-ups one client IP may post per
	// window (default DefaultSignupsPerHour an hour).
	SignupLimit oidc.RateLimit
	// ChangeHistory is how many change-log entries each tenant keeps
	// (compacted every 10 seconds); zero means DefaultChangeHistory, a negative
	// number keeps them all.
	ChangeHistory int
	// GatewayAddr is the tool gateway listener (default 127.0.0.1:8081);
	// "off" serves no gateway (the control plane's approval endpoints then
	// answer Unavailable).
	GatewayAddr string
	// Sandbox runs OS tools; nil makes them answer Unavailable.
	Sandbox gateway.OSRunner
	// StdioSandbox runs the processes of stdio MCP servers (the
	// sandbox.Runner behind Sandbox); nil makes them answer Unavailable.
	StdioSandbox mcp.Sandbox
	// Guardians calls external Guardian Agents over AOS.
	Guardians gateway.Guardian
	// AgBOMQueue runs the AgBOM refresh of every AgentCompiled as a
	// durable job (jobs.AgBOMs); nil refreshes in-process.
	AgBOMQueue agbom.Queue
	// Queue runs approval resumption and expiry as durable jobs; nil runs
	// resumption in-process.
	Queue gateway.Queue
	// Cluster runs key rotation, retention and the approval sweep once
	// per cluster, as River periodic jobs that New binds to this server;
	// nil runs rotation and retention on this server's own timers.
	Cluster *jobs.Cluster
	// ExecutionQueue runs executions as durable jobs (jobs.Executions);
	// nil runs them in goroutines of this process.
	ExecutionQueue execution.Queue
	// Announcer enqueues a new Approval's notifications in the transaction
	// that creates it (notifications.Service); nil sends none.
	Announcer gateway.Announcer
	// Inviter (optional) e-mails member invitations (notifications.Service).
	Inviter tenants.Inviter
	// PublicRoutes, when set, mounts routes that authenticate on their own
	// (signed notification callbacks, e-mail link pages) ahead of /v1's
	// authentication.
	PublicRoutes func(r fiber.Router)
	// Tracer receives one trace per tool call; nil means none.
	Tracer trace.TracerProvider
	// RouterAddr is the model router listener (port 8083); "" serves no
	// router.
	RouterAddr string
	// Timeouts bound how long a client may take to send a request on
	// every listener (zero fields: listener's defaults).
	Timeouts listener.Timeouts
	Now      func() time.Time
	// MCPAddr is the MCP gateway listener (app/mcp); "" serves none. It
	// needs the tool gateway, which governs its calls.
	MCPAddr string
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ControlAddr == "" {
		c.ControlAddr = "127.0.0.1:8080"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.GatewayAddr == "" {
		c.GatewayAddr = "127.0.0.1:8081"
	}
	if c.BookmarkInterval <= 0 {
		c.BookmarkInterval = 15 * time.Second
	}
	if c.SignupLimit.Attempts <= 0 || c.SignupLimit.Window <= 0 {
		c.SignupLimit = oidc.RateLimit{Attempts: DefaultSignupsPerHour, Window: time.Hour}
	}
	if c.ChangeHistory == 0 {
		c.ChangeHistory = DefaultChangeHistory
	}
	if c.PublicURL == "" && c.ControlAddr != ControlOff {
		scheme := "http"
		if c.TLSCertFile != "" {
			scheme = "https"
		}
		c.PublicURL = scheme + "://" + c.ControlAddr
	}
	if c.Compile.ControlURL == "" {
		// Manifests name the control plane as agents reach it.
		c.Compile.ControlURL = c.PublicURL
	}
	c.Compile = c.Compile.WithDefaults()
	if c.Adapters == nil {
		c.Adapters = adapter.NewRegistry(adapter.NewLocal(c.Logger))
	}
	return c
}

// DefaultSignupsPerHour is how many sign-ups one client IP may post an
// hour unless Config.SignupLimit says otherwise.
const DefaultSignupsPerHour = 5

// Validate reports configuration errors, naming the field.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("server config: Store is required")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("server config: TLSCertFile and TLSKeyFile go together: give both or neither")
	}
	if c.ControlAddr == ControlOff {
		if c.PublicURL == "" {
			return errors.New("server config: PublicURL is required when ControlAddr is off: it is the control plane's URL, the issuer of workload tokens")
		}
	} else if err := CheckTransport(c.ControlAddr, c.TLSCertFile != "", c.AllowPlaintext); err != nil {
		return err
	}
	if c.RouterAddr != "" {
		if err := CheckTransport(c.RouterAddr, c.TLSCertFile != "", c.AllowPlaintext); err != nil {
			return err
		}
	}
	if c.MCPAddr != "" {
		if err := CheckTransport(c.MCPAddr, c.TLSCertFile != "", c.AllowPlaintext); err != nil {
			return err
		}
	}
	if c.GatewayAddr != GatewayOff {
		return CheckTransport(c.GatewayAddr, c.TLSCertFile != "", c.AllowPlaintext)
	}
	return nil
}

// GatewayOff as Config.GatewayAddr serves no tool gateway.
const GatewayOff = "off"

// ControlOff as Config.ControlAddr serves no control plane: the process
// serves other services alone, beside a control plane elsewhere on the
// same store.
const ControlOff = "off"

// CheckTransport refuses to serve plaintext on an address other than
// loopback unless allowPlaintext says so.
func CheckTransport(addr string, tls, allowPlaintext bool) error {
	if tls || allowPlaintext {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to serve plaintext HTTP on %s, which is not a loopback address: "+
		"give --tls-cert and --tls-key, or --insecure-allow-plaintext when TLS is terminated in front of Warden", addr)
}

// TLSConfig loads the certificate pair into a server TLS configuration
// (TLS 1.2 at least); nil when TLS is not configured.
func (c Config) TLSConfig() (*tls.Config, error) {
	if c.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", c.TLSCertFile, c.TLSKeyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Server is the control plane. Build it with New.
type Server struct {
	cfg      Config
	store    store.Store
	log      *slog.Logger
	now      func() time.Time
	authn    *auth.Authenticator
	authz    *authz.Authorizer
	issuer   *workload.Issuer
	exchange *workload.TokenExchange
	pipeline *apply.Pipeline
	hub      *watch.Hub
	bus      *events.Bus
	app      *fiber.App
	// keyUse throttles API key lastUsedAt writes (apikeys.go).
	keyUse *keyUse
	// oidc is people sign-in; nil without Config.OIDC.
	oidc    *oidc.Handler
	console *web.Console
	// tenants is people, namespaces and roles: the console's screens and
	// /v1/members share it.
	tenants *tenants.Service
	// gateway is the tool gateway; nil with GatewayAddr "off".
	gateway *gateway.Gateway
	// router is the model router; nil without RouterAddr.
	router *router.Router
	// mcp is the MCP gateway and mcpLn its listener; nil without MCPAddr.
	mcp   *mcp.Service
	mcpLn net.Listener
	// agbom serves and regenerates AgBOMs; stopAgBOM ends its event
	// subscription.
	agbom     *agbom.Service
	stopAgBOM func()
	// executions runs agents (app/execution).
	executions *execution.Service
	// base ends streams when the server shuts down.
	base   context.Context
	cancel context.CancelFunc
}

// New builds the control plane server.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Keyring != nil {
		if err := checkMasterKey(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Keyring == nil {
		kr, err := ephemeralKeyring()
		if err != nil {
			return nil, err
		}
		cfg.Logger.Warn("no master key configured: using an ephemeral one; Secrets and workload signing keys will not survive a restart")
		cfg.Keyring = kr
	}
	initCtx, initCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer initCancel()
	issuer, err := workload.NewIssuer(initCtx, cfg.Store, cfg.Keyring, cfg.Now, workload.Options{Issuer: cfg.PublicURL})
	if err != nil {
		return nil, fmt.Errorf("workload identity issuer: %w", err)
	}
	if cfg.Signup && (cfg.OIDC == nil || len(cfg.OIDC.Issuers) == 0) {
		return nil, errors.New("sign-up needs an OIDC issuer (Config.OIDC): the new owner proves their e-mail address by signing in there")
	}
	people, err := newPeopleSignIn(cfg)
	if err != nil {
		return nil, err
	}
	verifiers := []auth.Verifier{workload.NewVerifier(issuer, workload.AudienceControlPlane, cfg.Now)}
	if people != nil {
		verifiers = append(verifiers, people.Verifier())
	}
	authn := auth.NewAuthenticator(cfg.Store, cfg.Now, verifiers...).WithTenantGuard(auth.NewTenantGuard(cfg.Store, cfg.Now, cfg.Logger))
	exchange, err := workload.NewTokenExchange(workload.ExchangeDeps{
		Issuer: issuer, APIKeys: authn, Store: cfg.Store, Kubernetes: cfg.Kubernetes, Now: cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("workload token exchange: %w", err)
	}
	bus := events.NewBus()
	policies := policy.NewEngine()
	compiler := compile.New(cfg.Compile, policies)
	base, cancel := context.WithCancel(context.Background())
	az := authz.New(cfg.Store, cfg.Now)
	s := &Server{
		cfg:      cfg,
		store:    cfg.Store,
		log:      cfg.Logger,
		now:      cfg.Now,
		authn:    authn,
		authz:    az,
		issuer:   issuer,
		exchange: exchange,
		pipeline: apply.New(apply.Deps{
			Store: cfg.Store, Compiler: compiler, Adapters: cfg.Adapters, Bus: bus, Logger: cfg.Logger, Now: cfg.Now,
			Authorizer: az, Keyring: cfg.Keyring, Policies: policies,
		}),
		hub:    watch.NewHub(cfg.Store, cfg.Logger),
		bus:    bus,
		oidc:   people,
		base:   base,
		cancel: cancel,
	}
	if cfg.GatewayAddr != GatewayOff {
		gwVerifiers := []auth.Verifier{workload.NewVerifier(issuer, workload.AudienceToolGateway, cfg.Now)}
		if people != nil {
			gwVerifiers = append(gwVerifiers, people.Verifier())
		}
		gwCfg := gateway.Config{
			Store: cfg.Store, Policies: policies, Authn: auth.NewAuthenticator(cfg.Store, cfg.Now, gwVerifiers...).WithTenantGuard(authn.TenantGuard()), Authz: az,
			Secrets: secret.NewBroker(cfg.Keyring), OS: cfg.Sandbox, Guardians: cfg.Guardians, Queue: cfg.Queue, Announcer: cfg.Announcer, Bus: bus,
			Tracer: cfg.Tracer, URL: cfg.Compile.ToolGatewayURL, Logger: cfg.Logger, Now: cfg.Now,
			Timeouts: cfg.Timeouts,
		}
		if cfg.MCPAddr != "" {
			if err := s.newMCP(issuer, people, bus); err != nil {
				cancel()
				return nil, err
			}
			gwCfg.MCP = s.mcp
		}
		gw, err := gateway.New(gwCfg)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("tool gateway: %w", err)
		}
		s.gateway = gw
		if s.mcp != nil {
			s.mcp.Bind(gw)
		}
	}
	if cfg.RouterAddr != "" {
		if s.router, err = newRouter(cfg, issuer, people, policies, az, bus); err != nil {
			cancel()
			return nil, err
		}
	}
	if err := s.buildConsole(); err != nil {
		cancel()
		return nil, err
	}
	if s.agbom, err = agbom.New(agbom.Config{Store: cfg.Store, Bus: bus, Logger: cfg.Logger, Now: cfg.Now}); err != nil {
		cancel()
		return nil, fmt.Errorf("agbom: %w", err)
	}
	s.stopAgBOM = s.agbom.Watch(bus, cfg.AgBOMQueue)
	if s.executions, err = execution.New(execution.Config{Store: cfg.Store, Issuer: issuer, Bus: bus, Queue: cfg.ExecutionQueue,
		ModelRouterURL: cfg.Compile.ModelRouterURL, ToolGatewayURL: cfg.Compile.ToolGatewayURL, Logger: cfg.Logger, Now: cfg.Now}); err != nil {
		cancel()
		return nil, fmt.Errorf("executions: %w", err)
	}
	// Grants change with RoleBindings and the Tenant record: drop the
	// tenant's cached decisions whenever one is applied.
	bus.Subscribe(func(ev events.Event) {
		if ev.Type == events.ResourceApplied && grantsSubject(ev.Subject) {
			az.Invalidate(ev.Tenant)
		}
	})
	s.app = s.routes()
	if cfg.Cluster != nil {
		cfg.Cluster.Bind(s)
	}
	return s, nil
}

// Issuer returns the workload identity issuer.
func (s *Server) Issuer() *workload.Issuer { return s.issuer }

// Authorizer returns the authorizer, whose grants the server keeps current
// as RoleBindings change: services served beside it (memory) decide with it.
func (s *Server) Authorizer() *authz.Authorizer { return s.authz }

func ephemeralKeyring() (*secret.Keyring, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate ephemeral master key: %w", err)
	}
	return secret.NewKeyring(key)
}

// grantsSubject reports whether an event subject ("Kind/name") is a
// resource that grants roles.
func grantsSubject(subject string) bool {
	kind, _, _ := strings.Cut(subject, "/")
	return kind == resource.KindRoleBinding || kind == resource.KindTenant
}

// App returns the Fiber application, for tests.
func (s *Server) App() *fiber.App { return s.app }

// Bus returns the in-process event bus.
func (s *Server) Bus() *events.Bus { return s.bus }

// Serve serves on ln until ctx is cancelled, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	err := s.serveControl(ctx, ln)
	s.closeGateway()
	return err
}

// serveControl serves the control plane until ctx ends or the listener
// fails, then ends the watch streams and lets the other requests finish
// (10 s at most).
func (s *Server) serveControl(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		// No control plane here (ControlOff): the background work runs
		// all the same, until ctx ends.
		s.background(s.base)
		<-ctx.Done()
		s.stopBackground()
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- s.app.Listener(ln) }()
	s.background(s.base)
	select {
	case err := <-errc:
		s.stopBackground()
		return err
	case <-ctx.Done():
	}
	s.stopBackground()
	if err := listener.ShutdownFiber(s.app, ln); err != nil {
		return fmt.Errorf("shut down control plane: %w", err)
	}
	return <-errc
}

// stopBackground stops the background loops and ends the watch streams
// (which would otherwise hold the shutdown for its whole timeout).
func (s *Server) stopBackground() {
	s.cancel()
	s.hub.Close()
	s.stopAgBOM()
}

// closeGateway stops the gateway's background work once no request can
// reach it any more: the calls in flight have recorded their results.
func (s *Server) closeGateway() {
	s.executions.Close()
	if s.gateway != nil {
		s.gateway.Close()
	}
	if s.mcp != nil {
		s.mcp.Close()
	}
}

// Gateway returns the tool gateway, nil when it is off.
func (s *Server) Gateway() *gateway.Gateway { return s.gateway }

// Run serves the control plane on cfg.ControlAddr until ctx is cancelled.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	return s.ListenAndServe(ctx)
}

// ListenAndServe listens on the configured addresses and serves until ctx
// is cancelled.
func (s *Server) ListenAndServe(ctx context.Context) error {
	if _, err := s.cfg.TLSConfig(); err != nil {
		return err
	}
	gatewayAddr := s.cfg.GatewayAddr
	if s.gateway == nil {
		gatewayAddr = GatewayOff
	}
	ls, err := Listen(s.cfg.ControlAddr, gatewayAddr)
	if err != nil {
		return err
	}
	if s.router != nil {
		if err := ls.ListenRouter(s.cfg.RouterAddr); err != nil {
			ls.Close()
			return err
		}
	}
	if s.mcp != nil && s.gateway != nil {
		if err := ls.BindMCP(s.cfg.MCPAddr); err != nil {
			ls.Close()
			return err
		}
	}
	return s.ServeListeners(ctx, ls)
}

// ServeAll serves the control plane on ln and the tool gateway on gln until
// ctx is cancelled or either fails. A nil ln serves no control plane
// (ControlOff), a nil gln no tool gateway: the gateway then only governs
// the MCP gateway's calls.
func (s *Server) ServeAll(ctx context.Context, ln, gln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gerr := make(chan error, 1)
	if gln == nil {
		gerr <- nil
	} else {
		go func() {
			gerr <- s.gateway.Serve(ctx, gln)
			cancel()
		}()
	}
	merr := s.serveMCP(ctx, cancel)
	err := s.serveControl(ctx, ln)
	cancel()
	if e := <-merr; err == nil && e != nil {
		err = fmt.Errorf("MCP gateway: %w", e)
	}
	// The gateway's listener is drained (its calls in flight finished)
	// before its recorder stops.
	e := <-gerr
	s.closeGateway()
	if err == nil && e != nil {
		err = fmt.Errorf("tool gateway: %w", e)
	}
	return err
}
