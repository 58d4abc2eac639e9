package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/resource"
)

// Transports a server answered on, as recorded in status.transport (and
// TransportStdio, stdio.go).
const (
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// dial connects to an MCP server over HTTP and initializes a session:
// streamable HTTP first, then the legacy HTTP+SSE transport of revision
// 2024-11-05. (A stdio server's session is its process's, stdio.go.)
func (s *Service) dial(ctx context.Context, spec resource.MCPServerSpec) (*sdk.ClientSession, string, error) {
	if spec.Transport == resource.MCPTransportStdio {
		return nil, "", errors.New("a stdio server is not dialled")
	}
	if spec.URL == "" {
		return nil, "", errors.New("spec.url is empty")
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "warden-mcp-gateway", Version: Version}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: spec.URL, HTTPClient: s.http, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err == nil {
		return cs, TransportStreamable, nil
	}
	if ctx.Err() != nil {
		return nil, "", fmt.Errorf("connect to %s: %w", spec.URL, err)
	}
	cs, serr := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: spec.URL, HTTPClient: s.http}, nil)
	if serr == nil {
		return cs, TransportSSE, nil
	}
	return nil, "", fmt.Errorf("connect to %s: streamable HTTP: %w; HTTP+SSE: %w", spec.URL, err, serr)
}

// sessions caches one initialized client session per MCP server for calls;
// a session that fails is dropped and dialled again.
type sessions struct {
	mu sync.Mutex
	m  map[string]*sessionEntry
}

type sessionEntry struct {
	ready chan struct{}
	cs    *sdk.ClientSession
	err   error
	// cancel ends the context the session's transport lives in (the
	// legacy SSE transport keeps its event stream open on it).
	cancel context.CancelFunc
}

func sessionKey(tenant, ns, server, url string) string {
	return tenant + "\x00" + ns + "\x00" + server + "\x00" + url
}

// stdioSessionPrefix starts the session key of a stdio server, whose
// session belongs to its process's supervisor.
const stdioSessionPrefix = "stdio\x00"

// session returns the cached session of a server, dialling it when needed;
// a stdio server's is its process's, started when needed.
func (s *Service) session(ctx context.Context, tenant, ns, server string, spec resource.MCPServerSpec) (*sdk.ClientSession, string, error) {
	if spec.Transport == resource.MCPTransportStdio {
		cs, err := s.stdio.session(ctx, stdioKey{tenant, ns, server}, spec)
		return cs, stdioSessionPrefix + sessionKey(tenant, ns, server, ""), err
	}
	key := sessionKey(tenant, ns, server, spec.URL)
	s.sess.mu.Lock()
	e, ok := s.sess.m[key]
	if !ok {
		e = &sessionEntry{ready: make(chan struct{})}
		s.sess.m[key] = e
		s.sess.mu.Unlock()
		// The session outlives this call: its context is the service's,
		// cancelled by DialTimeout only while dialling.
		dctx, cancel := context.WithCancel(s.base)
		timer := time.AfterFunc(s.cfg.DialTimeout, cancel)
		e.cs, _, e.err = s.dial(dctx, spec)
		if !timer.Stop() && e.err == nil {
			_ = e.cs.Close()
			e.cs, e.err = nil, fmt.Errorf("connect to %s: no session within %s", spec.URL, s.cfg.DialTimeout)
		}
		e.cancel = cancel
		close(e.ready)
		if e.err != nil {
			cancel()
			s.sess.mu.Lock()
			delete(s.sess.m, key)
			s.sess.mu.Unlock()
		}
		return e.cs, key, e.err
	}
	s.sess.mu.Unlock()
	select {
	case <-e.ready:
		return e.cs, key, e.err
	case <-ctx.Done():
		return nil, key, ctx.Err()
	}
}

// dropSession forgets a session (when it is still the cached one) and
// closes it.
func (s *Service) dropSession(key string, cs *sdk.ClientSession) {
	if k, ok := strings.CutPrefix(key, stdioSessionPrefix); ok {
		if parts := strings.Split(k, "\x00"); len(parts) == 4 {
			s.stdio.drop(stdioKey{parts[0], parts[1], parts[2]}, cs)
		}
		return
	}
	s.sess.mu.Lock()
	e, ok := s.sess.m[key]
	if ok && e.cs == cs {
		delete(s.sess.m, key)
	}
	s.sess.mu.Unlock()
	_ = cs.Close()
	if ok && e.cs == cs {
		e.cancel()
	}
}

// closeSessions closes every cached session.
func (s *Service) closeSessions() {
	s.sess.mu.Lock()
	m := s.sess.m
	s.sess.m = map[string]*sessionEntry{}
	s.sess.mu.Unlock()
	for _, e := range m {
		<-e.ready
		if e.cs != nil {
			_ = e.cs.Close()
			e.cancel()
		}
	}
}
