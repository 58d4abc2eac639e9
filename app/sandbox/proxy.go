package sandbox

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/warden-dev/warden/app/listener"
)

// egressProxy is the host side of a run's network egress: an HTTP proxy on
// a unix socket bound into the sandbox. It tunnels CONNECT requests and
// forwards absolute http:// requests, and only to the run's allowlist;
// everything else gets 403. It resolves names itself, so the sandbox needs
// no DNS. It logs destinations, never content.
type egressProxy struct {
	allow     allowlist
	logger    *slog.Logger
	dialer    *net.Dialer
	transport *http.Transport
	forward   *httputil.ReverseProxy
}

// Limits of the egress proxy.
const (
	egressDialTimeout   = 10 * time.Second
	egressHeaderTimeout = 10 * time.Second
)

func newEgressProxy(allow allowlist, logger *slog.Logger) *egressProxy {
	p := &egressProxy{
		allow:  allow,
		logger: logger,
		dialer: &net.Dialer{Timeout: egressDialTimeout},
	}
	p.transport = &http.Transport{
		Proxy:                 nil, // never chain through the gateway's own proxy settings
		DialContext:           p.dialer.DialContext,
		ResponseHeaderTimeout: time.Minute,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
	}
	p.forward = &httputil.ReverseProxy{
		// The request already carries its absolute destination; Rewrite
		// only exists so that no X-Forwarded-* headers are added.
		Rewrite:   func(*httputil.ProxyRequest) {},
		Transport: p.transport,
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.logger.LogAttrs(r.Context(), slog.LevelWarn, "sandbox egress: upstream failed",
				slog.String("host", r.URL.Host), slog.String("error", err.Error()))
			http.Error(w, "sandbox egress: upstream failed", http.StatusBadGateway)
		},
	}
	return p
}

// serveEgress serves the proxy on ln until the returned stop is called,
// which also closes every tunnel still open.
func serveEgress(ctx context.Context, ln net.Listener, allow allowlist, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := newEgressProxy(allow, logger)
	srv := &http.Server{
		Handler:           listener.RecoverHTTP(p, logger),
		ReadHeaderTimeout: egressHeaderTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          log.New(io.Discard, "", 0),
		// No ReadTimeout: it would stay on a CONNECT tunnel's hijacked
		// connection and cut it.
		IdleTimeout: listener.DefaultIdleTimeout,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		cancel()
		_ = srv.Close()
		<-done
		p.transport.CloseIdleConnections()
	}
}

// ServeHTTP implements http.Handler.
func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "sandbox egress: only CONNECT and absolute http:// URLs are proxied", http.StatusBadRequest)
		return
	}
	port := r.URL.Port()
	if port == "" {
		port = "80"
	}
	if !p.permit(r.Context(), r.URL.Hostname(), port) {
		http.Error(w, "sandbox egress: destination not allowed", http.StatusForbidden)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// connect answers a CONNECT request: it dials the destination and then
// copies bytes both ways until either side is done or the run ends.
func (p *egressProxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "sandbox egress: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	if !p.permit(r.Context(), host, port) {
		http.Error(w, "sandbox egress: destination not allowed", http.StatusForbidden)
		return
	}
	upstream, err := p.dialer.DialContext(r.Context(), "tcp", net.JoinHostPort(host, port))
	if err != nil {
		p.logger.LogAttrs(r.Context(), slog.LevelWarn, "sandbox egress: dial failed",
			slog.String("host", host), slog.String("port", port), slog.String("error", err.Error()))
		http.Error(w, "sandbox egress: cannot reach destination", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "sandbox egress: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	// The request context stays valid until this handler returns.
	splice(r.Context(), buf.Reader, client, upstream)
}

// permit checks host:port against the allowlist and logs the decision.
func (p *egressProxy) permit(ctx context.Context, host, port string) bool {
	ok := p.allow.allows(host, port)
	level := slog.LevelDebug
	if !ok {
		level = slog.LevelWarn
	}
	p.logger.LogAttrs(ctx, level, "sandbox egress", slog.String("host", host),
		slog.String("port", port), slog.Bool("allowed", ok))
	return ok
}

// splice copies fromClient to upstream and upstream to client until both
// directions are done or ctx ends, then closes both connections.
// fromClient is client itself or a reader with bytes already buffered from
// it.
func splice(ctx context.Context, fromClient io.Reader, client, upstream net.Conn) {
	stop := context.AfterFunc(ctx, func() {
		client.Close()
		upstream.Close()
	})
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(upstream, fromClient)
		closeWrite(upstream)
	}()
	_, _ = io.Copy(client, upstream)
	closeWrite(client)
	<-done
	client.Close()
	upstream.Close()
}

// closeWrite half-closes c when it can, so the peer sees EOF while the other
// direction keeps flowing.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
