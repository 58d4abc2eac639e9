package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-dev/warden/app/apply"
	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/authz"
	"github.com/warden-dev/warden/app/events"
	"github.com/warden-dev/warden/app/gateway"
	"github.com/warden-dev/warden/app/listener"
	"github.com/warden-dev/warden/app/resource"
	"github.com/warden-dev/warden/app/secret"
	"github.com/warden-dev/warden/app/store"
	"github.com/warden-dev/warden/app/upstream"
)

// Version is the version the gateway reports as an MCP client and server.
const Version = "0.1.0"

// Defaults of a Service.
const (
	DefaultDialTimeout     = 10 * time.Second
	DefaultCallTimeout     = 5 * time.Minute
	DefaultDiscoverTimeout = 30 * time.Second
	// DefaultDiscoverEvery is how often every server is discovered again.
	DefaultDiscoverEvery = 10 * time.Minute
	// DefaultMaxBodyBytes bounds the request body of every endpoint.
	DefaultMaxBodyBytes = 4 << 20
)

// Applier applies documents through the apply pipeline (pin writes
// spec.pinnedVersion, so the manifests of the agents that use the server
// are compiled again).
type Applier interface {
	Apply(ctx context.Context, pr auth.Principal, docs []*resource.Object) (*apply.Result, error)
}

// Config configures a Service.
type Config struct {
	Store store.Store
	// Authn verifies credentials on the MCP gateway's port: workload tokens
	// for the audience warden:mcp-gateway, API keys, people.
	Authn *auth.Authenticator
	Authz *authz.Authorizer
	// Applier writes pins; nil makes pin answer Unavailable.
	Applier Applier
	// Bus, when set, triggers a discovery of every MCPServer applied.
	Bus *events.Bus
	// HTTPClient reaches MCP servers; nil means one that never follows
	// redirects.
	HTTPClient *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
	// DialTimeout bounds connecting and initializing a session.
	DialTimeout time.Duration
	// DiscoverTimeout bounds the discovery of one server.
	DiscoverTimeout time.Duration
	// DiscoverEvery is the period of the background discovery; negative
	// disables it.
	DiscoverEvery time.Duration
	MaxBodyBytes  int64
	// Timeouts bound how long a client may take to send a request.
	Timeouts listener.Timeouts

	// Sandbox runs the processes of stdio MCP servers; nil makes them
	// answer Unavailable.
	Sandbox Sandbox
	// Secrets resolves the Secret references of a stdio server's
	// spec.env; nil refuses servers that have any.
	Secrets *secret.Broker
	// StopGrace is how long a stdio server may take to exit once asked
	// to, before its sandbox is killed.
	StopGrace time.Duration
}

// WithDefaults returns c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.DiscoverTimeout <= 0 {
		c.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if c.DiscoverEvery == 0 {
		c.DiscoverEvery = DefaultDiscoverEvery
	}
	if c.StopGrace <= 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		c.HTTPClient = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	return c
}

// Validate names the missing dependencies.
func (c Config) Validate() error {
	if c.Store == nil || c.Authn == nil || c.Authz == nil {
		return errors.New("mcp: Store, Authn and Authz are required")
	}
	return nil
}

// Service is the MCP gateway. Build it with New, hand it to the tool
// gateway as its gateway.MCPCaller, then Bind the tool gateway.
type Service struct {
	cfg  Config
	st   store.Store
	log  *slog.Logger
	now  func() time.Time
	http *http.Client
	// ups carries tools/call to plain-HTTP servers when HTTPClient was
	// not given; nil otherwise.
	ups  *upstream.Pools
	gw   *gateway.Gateway
	sess sessions
	// rpcID numbers the requests the gateway posts on MCP sessions.
	rpcID atomic.Int64
	// stdio runs the processes of stdio servers.
	stdio *stdioServers

	mu sync.Mutex
	// servers caches MCPServers per tenant for calls; a configuration
	// commit drops the tenant's entries, and an entry older than the
	// tenant's Store.ConfigGeneration is reloaded by the next call.
	servers map[string]*serverCache
	agents  *agentServers
	stop    []func()
	base    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	lean := cfg.HTTPClient == nil
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Service{
		cfg: cfg, st: cfg.Store, log: cfg.Logger, now: cfg.Now, http: cfg.HTTPClient,
		sess:    sessions{m: map[string]*sessionEntry{}},
		servers: map[string]*serverCache{},
		base:    base, cancel: cancel,
	}
	if lean {
		// Calls to plain-HTTP servers skip net/http (app/upstream).
		s.ups = upstream.NewPools(maxUpstreamConns)
		go s.ups.PruneUntil(base.Done())
	}
	s.agents = newAgentServers(s)
	s.stdio = newStdioServers(s)
	s.stop = append(s.stop, cfg.Store.ListenConfig(s.invalidate))
	if cfg.Bus != nil {
		s.stop = append(s.stop, cfg.Bus.Subscribe(s.onEvent))
	}
	return s, nil
}

// Bind gives the Service the tool gateway that governs its calls.
func (s *Service) Bind(gw *gateway.Gateway) { s.gw = gw }

// Close stops background work and closes the sessions to MCP servers.
func (s *Service) Close() {
	for _, stop := range s.stop {
		stop()
	}
	s.cancel()
	s.wg.Wait()
	s.agents.close()
	s.closeSessions()
	s.stdio.closeAll()
	if s.ups != nil {
		s.ups.Close()
	}
}

// invalidate drops the cached servers of a tenant.
func (s *Service) invalidate(tenant string) {
	s.mu.Lock()
	delete(s.servers, tenant)
	s.mu.Unlock()
	s.agents.invalidate(tenant)
	s.stdio.reconcile(tenant)
}

// serverCache is a tenant's MCPServers by "namespace/name", loaded after
// the tenant's configuration generation gen was read.
type serverCache struct {
	gen uint64
	m   map[string]*cachedServer
}

// cachedServer is an MCPServer and its spec, decoded once for the calls
// made until the tenant's configuration changes.
type cachedServer struct {
	obj  *resource.Object
	spec resource.MCPServerSpec
	// err is why the spec does not decode.
	err error
}

// cachedServer returns an MCPServer with its decoded spec, from the
// tenant's cache when it has one that no configuration commit has made
// stale: a quarantine or a pin that an apply committed applies to every
// call made after it answered. nil when there is no such server.
func (s *Service) cachedServer(ctx context.Context, tenant, ns, name string) (*cachedServer, error) {
	gen := s.st.ConfigGeneration(tenant)
	s.mu.Lock()
	c := s.servers[tenant]
	s.mu.Unlock()
	if c == nil || c.gen < gen {
		var all []*resource.Object
		err := s.st.View(ctx, tenant, func(ctx context.Context, r store.Reader) error {
			var err error
			all, err = store.ListAll(ctx, r, resource.KindMCPServer, nil)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("mcp: list MCP servers: %w", err)
		}
		c = &serverCache{gen: gen, m: make(map[string]*cachedServer, len(all))}
		for _, o := range all {
			cs := &cachedServer{obj: o}
			cs.spec, cs.err = resource.DecodeSpec[resource.MCPServerSpec](o)
			c.m[o.Metadata.Namespace+"/"+o.Metadata.Name] = cs
		}
		s.mu.Lock()
		if cur := s.servers[tenant]; cur == nil || cur.gen <= gen {
			s.servers[tenant] = c
		}
		s.mu.Unlock()
	}
	return c.m[ns+"/"+name], nil
}

// onEvent discovers an MCPServer once it is applied.
func (s *Service) onEvent(ev events.Event) {
	if ev.Type != events.ResourceApplied {
		return
	}
	kind, name, ok := cutSubject(ev.Subject)
	if !ok || kind != resource.KindMCPServer {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if _, err := s.discoverOne(s.base, auth.SystemPrincipal(ev.Tenant), ev.Namespace, name); err != nil {
			s.log.Warn("discovery after apply failed", "tenant", ev.Tenant, "namespace", ev.Namespace, "server", name, "err", err)
		}
	}()
}

func cutSubject(subject string) (kind, name string, ok bool) {
	for i := 0; i < len(subject); i++ {
		if subject[i] == '/' {
			return subject[:i], subject[i+1:], true
		}
	}
	return "", "", false
}
