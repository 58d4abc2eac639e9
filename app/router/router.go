package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/policy"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/upstream"
)

// Defaults of a Router.
const (
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultAttemptTimeout bounds one provider attempt: a non-streamed
	// answer, or a stream up to its first chunk.
	DefaultAttemptTimeout = 120 * time.Second
	// DefaultMaxInFlight bounds the model calls served at once; more are
	// answered 503 with Retry-After.
	DefaultMaxInFlight = 1024
	// DefaultMaxConns bounds the client connections open at once; more
	// are answered 503 with Retry-After and closed. With one connection to
	// a provider per call in flight, the router holds at most
	// DefaultMaxConns + DefaultMaxInFlight sockets.
	DefaultMaxConns = 8192
)

// Config configures a Router.
type Config struct {
	Store    store.Store
	Policies *policy.Engine
	// Authn verifies workload tokens of audience warden:model-router, API
	// keys and people.
	Authn *auth.Authenticator
	// Authz decides who may call models and read decisions.
	Authz *authz.Authorizer
	// Secrets resolves the Models' API keys.
	Secrets *secret.Broker
	// Bus receives every persisted event after commit.
	Bus *events.Bus
	// Tracer makes one span per model call; nil means none.
	Tracer trace.TracerProvider
	// HTTPClient calls HTTPS providers and those behind a proxy; nil
	// means one over NewTransport. Plain-HTTP providers are called over
	// the router's own connections.
	HTTPClient *http.Client
	// MaxInFlight bounds the model calls served at once
	// (DefaultMaxInFlight when zero); it also bounds the connections to
	// each plain-HTTP provider.
	MaxInFlight int
	// MaxConns bounds the client connections open at once
	// (DefaultMaxConns when zero).
	MaxConns int
	// AttemptTimeout bounds one provider attempt; DefaultAttemptTimeout
	// when zero.
	AttemptTimeout time.Duration
	MaxBodyBytes   int64
	// Timeouts bound how long a client may take to send a request and
	// how long an idle connection is kept (listener's defaults).
	Timeouts listener.Timeouts
	Logger   *slog.Logger
	Now      func() time.Time
}

// Router is the model router. Build it with New; it is safe for
// concurrent use.
type Router struct {
	cfg     Config
	st      store.Store
	log     *slog.Logger
	now     func() time.Time
	tracer  trace.Tracer
	catalog *catalog
	rec     *recorder
	ups     *upstream.Pools
	// inFlight counts the model calls being served.
	inFlight atomic.Int64
	stop     func()
	closed   sync.Once
	// done ends the pruning of idle provider connections.
	done chan struct{}
}

// New builds a router and starts its recorder and cache invalidation.
func New(cfg Config) (*Router, error) {
	if cfg.Store == nil || cfg.Policies == nil || cfg.Authn == nil || cfg.Authz == nil || cfg.Secrets == nil {
		return nil, errors.New("router: Store, Policies, Authn, Authz and Secrets are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Bus == nil {
		cfg.Bus = events.NewBus()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: NewTransport(), CheckRedirect: func(*http.Request, []*http.Request) error {
			// A provider that redirects could send the API key elsewhere.
			return http.ErrUseLastResponse
		}}
	}
	tp := cfg.Tracer
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	ups := upstream.NewPools(cfg.MaxInFlight)
	r := &Router{
		cfg:    cfg,
		ups:    ups,
		done:   make(chan struct{}),
		st:     cfg.Store,
		log:    cfg.Logger,
		now:    cfg.Now,
		tracer: tp.Tracer("github.com/warden-dev/warden/app/router"),
		catalog: &catalog{st: cfg.Store, engine: cfg.Policies, secrets: cfg.Secrets, hc: cfg.HTTPClient, ups: ups, log: cfg.Logger,
			entries: map[string]*catalogEntry{}},
		rec: newRecorder(cfg.Store, cfg.Bus, cfg.Logger),
	}
	r.stop = cfg.Store.ListenConfig(r.catalog.invalidate)
	go r.ups.PruneUntil(r.done)
	return r, nil
}

// Close stops the router's background work, writing every queued record.
// Call it once no request can reach the router any more.
func (r *Router) Close() {
	r.closed.Do(func() {
		r.stop()
		close(r.done)
		r.rec.close()
		r.ups.Close()
	})
}

// Flush returns once every record of the calls answered so far is written.
func (r *Router) Flush(ctx context.Context) error { return r.rec.flush(ctx) }

// Serve serves the router on ln until ctx ends, then lets the requests in
// flight finish (10 s at most).
func (r *Router) Serve(ctx context.Context, ln net.Listener) error {
	app := r.App()
	errc := make(chan error, 1)
	cl := newConnLimit(ln, r.cfg.MaxConns)
	go func() { errc <- app.Listener(cl) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("serve model router: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	if err := listener.ShutdownFiber(app, cl); err != nil {
		return fmt.Errorf("shut down model router: %w", err)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("serve model router: %w", err)
	}
	return nil
}

// Invalidate drops the cached configuration of a tenant.
func (r *Router) Invalidate(tenant string) { r.catalog.invalidate(tenant) }

func errorf(format string, args ...any) error { return fmt.Errorf("router: "+format, args...) }

// newID returns a decision id, "rd-" and 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "rd-" + hex.EncodeToString(b[:])
}

// SetAttemptTimeout changes the timeout of one provider attempt (tests
// and benchmarks).
func (r *Router) SetAttemptTimeout(d time.Duration) { r.cfg.AttemptTimeout = d }
