package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/riverqueue/river"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/oidc"
	"github.com/warden-dev/warden/app/sandbox"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/server"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/store/backend"
	"github.com/warden-dev/warden/jobs"
	"github.com/warden-dev/warden/notifications"
	approvalsweb "github.com/warden-dev/warden/web/approvals"
)

// processSpec says what one Warden process runs: every service for `warden
// up`, one for `warden serve`. Its listeners are bound before the spec is
// built, so that a busy port fails having changed nothing.
type processSpec struct {
	// storeURL names the store; dataDir holds the master key file (and,
	// for RAG, the knowledge file root).
	storeURL, dataDir string
	// noMigrate refuses a schema that is behind instead of migrating it.
	noMigrate bool
	// masterKeyMustExist refuses to create a missing master key file: a
	// process that joins an installation must use its key.
	masterKeyMustExist bool
	// listenHost is the host the listeners bind to, which compiled
	// manifests name (as clientHost) for services on their default ports.
	listenHost string
	tls        tlsOptions
	// controlURL is the control plane as this machine reaches it and
	// publicURL as agents do: the issuer of workload tokens.
	controlURL, publicURL string
	// people configures console sign-in (the control plane only).
	people        peopleOptions
	home          string
	changeHistory int

	// listeners are the control plane's (nil Control: none), the tool
	// gateway's, the MCP gateway's and the model router's.
	listeners *server.Listeners
	// gateway builds the tool gateway even without its listener: the MCP
	// gateway's calls go through it.
	gateway bool
	// gatewayAddr is where the tool gateway listens, or is said to.
	gatewayAddr, routerAddr, mcpAddr string
	// gatewayURL, mcpURL and memoryURL are what compiled manifests name
	// ("" keeps the default address).
	gatewayURL, mcpURL, memoryURL string
	memLn                         net.Listener
	rag                           *ragService
	ragOpts                       ragOptions
	trace                         traceOptions

	// setup runs once the store is open and the master key checked, before
	// any service is built: up's first start.
	setup func(ctx context.Context, st store.Store) error
	// wrapStore, when set, wraps the opened store for every service; tests
	// use it to make a store call fail or panic.
	wrapStore func(store.Store) store.Store
}

// process is a Warden process built from a processSpec: start it, say what
// it serves, then serve until the context ends; close releases it.
type process struct {
	spec    processSpec
	log     *slog.Logger
	now     func() time.Time
	st      store.Store
	srv     *server.Server
	queue   *jobs.Queue
	tuned   runtimeSettings
	closers []func()

	oidc          *oidc.Config
	sandboxErr    error
	traceSummary  []string
	traceEndpoint string
}

// close releases what build acquired, last first.
func (p *process) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

func (p *process) onClose(f func()) { p.closers = append(p.closers, f) }

// buildProcess opens the store and builds every service spec asks for. On
// error it has released what it acquired, the listeners too.
func (a *app) buildProcess(ctx context.Context, spec processSpec) (_ *process, err error) {
	p := &process{spec: spec, now: a.env.Now, log: slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	p.onClose(spec.listeners.Close)
	p.onClose(spec.rag.close)
	p.onClose(func() {
		if p.spec.memLn != nil {
			_ = p.spec.memLn.Close()
		}
	})
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// A certificate pair that does not load fails now, before first-start
	// setup, like a busy port.
	if _, err := spec.tls.config(); err != nil {
		return nil, err
	}
	if p.tuned, err = tuneRuntime(a.env.LookupEnv, backend.Embedded(spec.storeURL)); err != nil {
		return nil, err
	}
	p.onClose(p.tuned.stop)

	keyFile := filepath.Join(spec.dataDir, secret.MasterKeyFileName)
	if spec.masterKeyMustExist {
		if v, ok := a.env.LookupEnv(secret.EnvMasterKey); !ok || v == "" {
			if _, err := os.Stat(keyFile); err != nil {
				return nil, fmt.Errorf("master key: %s is not set and %s cannot be read (%w); "+
					"give the installation's key in %s, or its key file with --data-dir", secret.EnvMasterKey, keyFile, err, secret.EnvMasterKey)
			}
		}
	}
	masterKey, err := secret.LoadMasterKey(a.env.LookupEnv, keyFile)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	keyring, err := secret.NewKeyring(masterKey)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	st, err := backend.Open(ctx, spec.storeURL, backend.Options{Logger: p.log, NoMigrate: spec.noMigrate})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", redactURL(spec.storeURL), err)
	}
	p.onClose(func() { _ = st.Close() })
	if spec.wrapStore != nil {
		st = spec.wrapStore(st)
	}
	p.st = st
	// Before anything is written: a replica with another master key
	// would replace the signing keys it cannot open.
	if err := secret.CheckMasterKey(ctx, st, keyring); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if spec.setup != nil {
		if err := spec.setup(ctx, st); err != nil {
			return nil, err
		}
	}
	if p.oidc, err = a.oidcConfig(spec.home, spec.publicURL, spec.tls.cert != "", spec.people); err != nil {
		return nil, err
	}
	// Warden's own spans go to the trace store and, when configured, to
	// an OTLP collector too.
	tracer, traceEndpoint, err := wardenTracer(ctx, a.env.LookupEnv)
	if err != nil {
		return nil, err
	}
	p.traceEndpoint = traceEndpoint
	p.onClose(func() {
		// Flush the spans still queued; a collector that is gone
		// costs at most traceShutdownTimeout.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceShutdownTimeout)
		defer cancel()
		if err := tracer.Shutdown(sctx); err != nil {
			p.log.Warn("flush traces", "err", err)
		}
	})
	if err := p.buildServices(ctx, a, keyring, masterKey, tracer); err != nil {
		return nil, err
	}
	return p, nil
}

// buildServices builds the job queue, the notifier, the server (control
// plane, gateways, router), the trace, RAG and memory services.
func (p *process) buildServices(ctx context.Context, a *app, keyring *secret.Keyring, masterKey []byte, tracer *sdktrace.TracerProvider) error {
	spec, st, logger := p.spec, p.st, p.log
	var osTools gateway.OSRunner
	if spec.gateway {
		runner, err := sandbox.New(ctx, sandbox.Config{Logger: logger})
		if err != nil {
			p.sandboxErr = err // said once, in the summary
		} else {
			osTools = gateway.Sandbox{Runner: runner}
		}
	}
	// Durable approval work (resume, expiry) runs as River jobs on the
	// store's database, and so does the work that must run once per
	// cluster (key rotation, retention, the approval sweep), inserted by
	// River's leader among every process on that database.
	workers := river.NewWorkers()
	approvals := jobs.NewApprovals(workers)
	notifyJobs := jobs.NewNotifications(workers)
	inviteJobs := jobs.NewInvitations(workers, notifyJobs)
	agboms := jobs.NewAgBOMs(workers)
	executions := jobs.NewExecutions(workers)
	cluster := jobs.NewCluster(workers, jobs.ClusterConfig{})
	queues := cluster.Queues(spec.gateway, spec.mcpAddr != "")
	if spec.rag != nil {
		spec.rag.jobs = jobs.NewRAG(workers)
		queues[jobs.QueueRAG] = jobs.RAGQueueConfig()
	}
	queue, err := openQueue(ctx, st, spec.storeURL, jobs.Config{Workers: workers, Logger: logger,
		PeriodicJobs: cluster.PeriodicJobs(), Queues: queues, NoMigrate: spec.noMigrate})
	if err != nil {
		return fmt.Errorf("job queue: %w", err)
	}
	p.queue = queue
	p.onClose(func() { stopQueue(queue, logger) })
	approvals.SetQueue(queue)
	agboms.SetQueue(queue)
	executions.SetQueue(queue)
	// Approvals are announced on the NotificationChannels that select
	// them, by jobs enqueued with the Approval.
	notifyJobs.SetQueue(queue)
	notifier, err := notifications.New(notifications.Config{Store: st, Secrets: secret.NewBroker(keyring), Jobs: notifyJobs,
		Invites: inviteJobs, PublicURL: spec.publicURL, LinkKey: notifications.DeriveLinkKey(masterKey), Logger: logger, Now: a.env.Now})
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	// Signed callbacks of the channels and the pages e-mail links open.
	publicRoutes := func(r fiber.Router) {
		notifier.Register(r)
		approvalsweb.NewLinkHandler(notifier, a.env.Now).Register(r)
	}
	scheme := spec.scheme()
	compileOpts := manifestURLs(scheme, spec.listenHost, spec.publicURL, spec.gatewayURL)
	if spec.mcpURL != "" {
		compileOpts.MCPGatewayURL = spec.mcpURL
	}
	if spec.memoryURL != "" {
		compileOpts.MemoryURL = spec.memoryURL
	}
	controlAddr, gatewayAddr := server.ControlOff, server.GatewayOff
	if spec.listeners.Control != nil {
		controlAddr = spec.listeners.Control.Addr().String()
	}
	if spec.gateway {
		gatewayAddr = spec.gatewayAddr
	}
	var agbomQueue, executionQueue = agbomQueue(agboms, spec.gateway), executionQueue(executions, spec.gateway)
	srv, err := server.New(server.Config{
		Queue:          approvals,
		Announcer:      notifier,
		Inviter:        notifier,
		PublicRoutes:   publicRoutes,
		AgBOMQueue:     agbomQueue,
		ExecutionQueue: executionQueue,
		Cluster:        cluster,
		Sandbox:        osTools,
		Store:          st,
		Logger:         logger,
		ControlAddr:    controlAddr,
		GatewayAddr:    gatewayAddr,
		RouterAddr:     spec.routerAddr,
		Compile:        compileOpts,
		MCPAddr:        spec.mcpAddr,
		TLSCertFile:    spec.tls.cert,
		TLSKeyFile:     spec.tls.key,
		Keyring:        keyring,
		PublicURL:      spec.publicURL,
		OIDC:           p.oidc,
		LocalSignIn:    p.oidc == nil,
		Signup:         spec.people.signup,
		SignupLimit:    oidc.RateLimit{Attempts: spec.people.signupsPerHour, Window: time.Hour},
		ChangeHistory:  spec.changeHistory,
		Tracer:         tracer,
		AllowPlaintext: spec.tls.allowPlaintext,
		Now:            a.env.Now,
	})
	if err != nil {
		return err
	}
	p.srv = srv
	stopTrace, traceSummary, err := startTrace(ctx, st, srv, tracer, spec.trace, spec.listenHost, spec.tls, logger)
	if err != nil {
		return err
	}
	p.traceSummary = traceSummary
	p.onClose(stopTrace)
	agboms.Bind(srv.AgBOM())
	if spec.rag != nil {
		spec.rag.jobs.SetQueue(queue)
		if err := spec.rag.build(a, srv, st, spec.ragOpts, spec.dataDir, scheme, spec.listenHost, logger); err != nil {
			return fmt.Errorf("RAG service: %w", err)
		}
	}
	executions.Bind(srv.Executions())
	if gw := srv.Gateway(); gw != nil {
		approvals.Bind(gw)
		notifier.SetDecider(gw)
		notifyJobs.Bind(notifier)
		inviteJobs.Bind(notifier)
	}
	return nil
}

// scheme is the scheme of the URLs the process's listeners answer.
func (s processSpec) scheme() string {
	if s.tls.cert != "" {
		return "https"
	}
	return "http"
}

// serviceURL is the URL a local client reaches port on the listen host at.
func (s processSpec) serviceURL(port int) string {
	return s.scheme() + "://" + net.JoinHostPort(clientHost(s.listenHost), strconv.Itoa(port))
}

// start starts the job queue and sweeps the approvals a stopped process
// left, before anything is served.
func (p *process) start(ctx context.Context) error {
	// The queue stops when the process closes, not when ctx ends, so that
	// jobs are not cut off halfway through a store write.
	if err := p.queue.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	if gw := p.srv.Gateway(); gw != nil {
		if err := gw.Sweep(ctx); err != nil {
			p.log.Error("sweep approvals at start-up", "err", err)
		}
	}
	return nil
}

// serve serves every listener until ctx ends or one fails; nil when ctx
// ended.
func (p *process) serve(ctx context.Context) error {
	spec := p.spec
	tlsCfg, err := spec.tls.config()
	if err != nil {
		return err
	}
	stopMemory, err := serveMemory(ctx, spec.memLn, p.srv, p.st, manifestURLs(spec.scheme(), spec.listenHost, spec.publicURL, "").ModelRouterURL,
		tlsCfg, p.log, p.now)
	p.spec.memLn = nil // serveMemory owns it now
	if err != nil {
		return err
	}
	ragCtx, stopRAG := context.WithCancel(ctx)
	waitRAG := spec.rag.serve(ragCtx, p.log)
	err = p.srv.ServeListeners(ctx, spec.listeners)
	stopRAG()
	waitRAG()
	stopMemory()
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// config loads the certificate pair; nil without TLS.
func (o tlsOptions) config() (*tls.Config, error) {
	return server.Config{TLSCertFile: o.cert, TLSKeyFile: o.key}.TLSConfig()
}
