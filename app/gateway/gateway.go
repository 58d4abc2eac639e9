package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/warden-dev/warden/app/aos"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
)

// Limits of a call.
const (
	// DefaultMaxInputBytes bounds the request body of POST /v1/tool-calls
	// and of a hook call.
	DefaultMaxInputBytes = 1 << 20
	// DefaultWait is how long a call waits for its result before the
	// gateway answers with the record as it stands.
	DefaultWait = 30 * time.Second
	// MaxWait bounds ?wait= and the body's wait.
	MaxWait = 5 * time.Minute
	// DefaultRESTTimeout and DefaultMaxResponseBytes apply to REST tools
	// that set none.
	DefaultRESTTimeout      = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	// DefaultOSTimeout applies to OS tools that set none.
	DefaultOSTimeout = 10 * time.Second
)

// OSRunner runs an OS tool's command in a sandbox (app/sandbox).
type OSRunner interface {
	RunTool(ctx context.Context, job OSJob) (*OSResult, error)
}

// OSJob is one sandboxed command: the Tool's spec.os plus the call's input
// on stdin.
type OSJob struct {
	Command        []string
	Stdin          []byte
	Timeout        time.Duration
	CPUSeconds     int64
	MemoryMB       int64
	AllowRead      []string
	AllowWrite     []string
	AllowHosts     []string
	MaxOutputBytes int64
}

// OSResult is what a sandboxed command did.
type OSResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	TimedOut  bool
	Truncated bool
	Duration  time.Duration
}

// MCPCaller calls a tool of an MCP server (the MCP gateway). A tool that
// answers with an error result returns that result with an
// apierr.Error (ToolFailed); both are recorded.
type MCPCaller interface {
	CallTool(ctx context.Context, tenant, namespace, server, tool string, input map[string]any) (any, error)
}

// Guardian calls an external Guardian Agent.
type Guardian interface {
	Decide(ctx context.Context, g policy.Guardian, hook string, c *GuardianCall) (GuardianDecision, error)
}

// GuardianCall is what an external Guardian Agent is shown.
type GuardianCall struct {
	Tenant, Namespace, Environment, Agent string
	Call, Tool, Execution                 string
	Input                                 map[string]any
	Output                                any
	IsError                               bool
}

// GuardianDecision is an external Guardian Agent's answer.
type GuardianDecision struct {
	// Action is allow, deny or modify.
	Action  string
	Message string
	// Input is the modified input (toolCallRequest) when Action is modify.
	Input map[string]any
	// Output is the modified result (toolCallResult) when Action is modify.
	Output any
}

// Queue schedules the durable work of approvals (River jobs).
type Queue interface {
	// Resume runs an approved call once, on some replica.
	Resume(ctx context.Context, tenant, namespace, call string) error
	// Expire expires an approval at its deadline unless decided before.
	Expire(ctx context.Context, tenant, namespace, approval string, at time.Time) error
}

// TxQueue is a Queue that can also schedule a resumption inside the store
// transaction that records the approval (jobs.Approvals on Postgres), so
// that the decision and its job commit together. ResumeTx reports false,
// having done nothing, when it cannot for tx; the gateway then schedules
// with Resume after the commit.
type TxQueue interface {
	ResumeTx(ctx context.Context, tx any, tenant, namespace, call string) (bool, error)
}

// Config configures a Gateway.
type Config struct {
	Store    store.Store
	Policies *policy.Engine
	// Authn verifies credentials on the gateway's own port: workload
	// tokens for the audience warden:tool-gateway, API keys, people.
	Authn *auth.Authenticator
	// Authz decides who may approve, cancel and replay calls.
	Authz *authz.Authorizer
	// Secrets resolves REST header secrets at the gateway boundary.
	Secrets *secret.Broker
	// OS runs OS tools; nil makes them answer Unavailable.
	OS OSRunner
	// MCP calls MCP tools; nil makes them answer Unavailable.
	MCP MCPCaller
	// Guardians calls external Guardian Agents; nil makes a policy that
	// names one fail as its failOpen setting says.
	Guardians Guardian
	// Queue schedules approval resumption and expiry; nil runs resumption
	// in-process (tests) and leaves expiry to the next read.
	Queue Queue
	// Announcer enqueues an approval's notifications in the transaction
	// that creates it; nil sends none.
	Announcer Announcer
	// Bus receives every persisted event after commit.
	Bus *events.Bus
	// Tracer makes one trace per call; nil means no tracing.
	Tracer trace.TracerProvider
	// HTTPClient calls REST tools; nil means a client with sane timeouts.
	HTTPClient *http.Client
	// URL is the gateway's public URL, shown in manifests.
	URL           string
	Logger        *slog.Logger
	Now           func() time.Time
	MaxInputBytes int
	// RecordWorkers is the number of group-commit writers; default 2.
	RecordWorkers int
	// Timeouts bound how long a client may take to send a request
	// (zero fields: listener's defaults).
	Timeouts listener.Timeouts
}

// Gateway runs tool calls. Build it with New; it is safe for concurrent
// use.
type Gateway struct {
	cfg     Config
	st      store.Store
	log     *slog.Logger
	now     func() time.Time
	tracer  trace.Tracer
	http    *http.Client
	catalog *catalog
	rec     *recorder
	waiters *waiters
	aosCall *aosCalls
	aos     *aos.Handler
	stop    []func()
	bg      background
	base    context.Context
	cancel  context.CancelFunc
}

// New builds a gateway and starts its recorder and cache invalidation.
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil || cfg.Policies == nil || cfg.Authn == nil || cfg.Authz == nil {
		return nil, errors.New("gateway: Store, Policies, Authn and Authz are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxInputBytes <= 0 {
		cfg.MaxInputBytes = DefaultMaxInputBytes
	}
	if cfg.RecordWorkers <= 0 {
		cfg.RecordWorkers = 2
	}
	if cfg.Bus == nil {
		cfg.Bus = events.NewBus()
	}
	tp := cfg.Tracer
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		tr.ResponseHeaderTimeout = DefaultRESTTimeout
		hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			// A tool endpoint that redirects could send the resolved
			// secret headers elsewhere: never follow.
			return http.ErrUseLastResponse
		}}
	}
	base, cancel := context.WithCancel(context.Background())
	g := &Gateway{
		cfg:     cfg,
		st:      cfg.Store,
		log:     cfg.Logger,
		now:     cfg.Now,
		tracer:  tp.Tracer("github.com/warden-dev/warden/app/gateway"),
		http:    hc,
		waiters: newWaiters(),
		aosCall: newAOSCalls(),
		base:    base,
		cancel:  cancel,
	}
	h, err := aos.NewHandler(&governor{g: g}, aos.HandlerConfig{Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		cancel()
		return nil, errorf("AOS hook handler: %w", err)
	}
	g.aos = h
	g.catalog = newCatalog(cfg.Store, cfg.Policies, cfg.Logger)
	g.rec = newRecorder(cfg.Store, cfg.RecordWorkers)
	g.stop = append(g.stop,
		cfg.Store.ListenConfig(g.catalog.invalidate),
		cfg.Store.Listen(g.waiters.wakeTenant),
	)
	return g, nil
}

// Close stops the gateway's background work: resumed calls get up to
// resumeDrain to record their results, then the recorder commits what is
// queued and refuses later writes. Call it once no request can reach the
// gateway any more (server.Server drains its listeners first), so that the
// calls in flight have recorded their results.
func (g *Gateway) Close() {
	for _, stop := range g.stop {
		stop()
	}
	g.bg.close(resumeDrain)
	g.cancel()
	g.rec.close()
}

// Invalidate drops the cached configuration of a tenant; the store's
// ListenConfig does this on every configuration commit.
func (g *Gateway) Invalidate(tenant string) { g.catalog.invalidate(tenant) }

func (g *Gateway) publish(evs []events.Event) {
	for _, ev := range evs {
		g.cfg.Bus.Publish(ev)
	}
}

// errorf is a shorthand for wrapped internal errors.
func errorf(format string, args ...any) error { return fmt.Errorf("gateway: "+format, args...) }
