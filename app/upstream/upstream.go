// Package upstream is a lean HTTP/1.1 client for plain-HTTP servers on
// the data path: model providers reached without TLS (a local vLLM,
// Ollama or LM Studio, a provider behind a sidecar) and MCP servers. A
// request is written with one system call, the answer is read on the
// caller's goroutine with only the headers callers use parsed, and no
// per-connection goroutines hand the bytes over: on a routed model call
// that halved the CPU of the hop (docs/performance.md). HTTPS servers and
// those reached through a proxy keep net/http (For says which is which).
package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// IdleTimeout is how long an idle connection is kept.
	IdleTimeout = 60 * time.Second
	// upstreamDialTimeout bounds a connection's set-up.
	upstreamDialTimeout = 5 * time.Second
	// upstreamBuffer is a connection's read buffer.
	upstreamBuffer = 8 << 10
	// maxHeaderBytes bounds an answer's header section.
	maxHeaderBytes = 64 << 10
)

// ErrFull is a server's connection pool at its limit.
var ErrFull = errors.New("the connection limit to this server is reached")

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

// Pools are connection pools, one per server address, kept across
// configuration changes (a Model's or MCPServer's snapshot is rebuilt on
// every commit; its connections are not).
type Pools struct {
	maxConns int
	dialer   net.Dialer

	mu     sync.Mutex
	pools  map[string]*Pool
	closed atomic.Bool
	// targets memoizes For by URL: callers on the data path (the MCP
	// gateway, every call) need not parse a URL and look up its proxy
	// each time. net/http reads the proxy settings once a process, so an
	// answer never goes stale.
	targets sync.Map // string → target
}

// target is what For answers for one URL.
type target struct {
	pool *Pool
	uri  string
	ok   bool
}

// NewPools returns pools of at most maxConns connections each.
func NewPools(maxConns int) *Pools {
	return &Pools{maxConns: maxConns, pools: map[string]*Pool{},
		dialer: net.Dialer{Timeout: upstreamDialTimeout, KeepAlive: 30 * time.Second}}
}

// For returns the pool of a URL and the request target on it, or ok false
// when the URL is not one for these connections: not plain http, with
// credentials in it, or reached through a proxy (HTTP_PROXY and
// NO_PROXY as net/http reads them).
func (us *Pools) For(raw string) (p *Pool, uri string, ok bool) {
	if t, hit := us.targets.Load(raw); hit {
		t := t.(target)
		return t.pool, t.uri, t.ok
	}
	t := us.target(raw)
	us.targets.Store(raw, t)
	return t.pool, t.uri, t.ok
}

func (us *Pools) target(raw string) target {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
		return target{}
	}
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || proxy != nil {
		return target{}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return target{pool: us.Get(addr, u.Host), uri: u.RequestURI(), ok: true}
}

// Get returns the pool of a host:port; host is the Host header it sends.
func (us *Pools) Get(addr, host string) *Pool {
	us.mu.Lock()
	defer us.mu.Unlock()
	u := us.pools[addr]
	if u == nil {
		u = &Pool{us: us, addr: addr, host: host}
		us.pools[addr] = u
	}
	return u
}

// PruneUntil closes idle connections that outlived IdleTimeout, every
// half of it, until done is closed.
func (us *Pools) PruneUntil(done <-chan struct{}) {
	tick := time.NewTicker(IdleTimeout / 2)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			us.Prune(now)
		case <-done:
			return
		}
	}
}

// Prune closes the connections idle for longer than IdleTimeout.
func (us *Pools) Prune(now time.Time) {
	us.mu.Lock()
	pools := make([]*Pool, 0, len(us.pools))
	for _, u := range us.pools {
		pools = append(pools, u)
	}
	us.mu.Unlock()
	for _, u := range pools {
		u.prune(now, false)
	}
}

// Close closes every idle connection; busy ones close when released.
func (us *Pools) Close() {
	us.closed.Store(true)
	us.mu.Lock()
	pools := us.pools
	us.mu.Unlock()
	for _, u := range pools {
		u.prune(time.Time{}, true)
	}
}

// Pool is the connection pool of one server address.
type Pool struct {
	us   *Pools
	addr string
	host string

	mu sync.Mutex
	// idle holds the idle connections, the most recently used last.
	idle []*upConn
	open int
}

// upConn is one connection to a server.
type upConn struct {
	u    *Pool
	nc   net.Conn
	br   *bufio.Reader
	used time.Time
	// reused says the connection served a request before this one.
	reused bool
}

func (u *Pool) prune(now time.Time, all bool) {
	u.mu.Lock()
	n := 0
	for n < len(u.idle) && (all || now.Sub(u.idle[n].used) > IdleTimeout) {
		n++
	}
	stale := append([]*upConn(nil), u.idle[:n]...)
	u.idle = append(u.idle[:0], u.idle[n:]...)
	u.open -= len(stale)
	u.mu.Unlock()
	for _, c := range stale {
		_ = c.nc.Close()
	}
}

// conn returns an idle connection, or dials one.
func (u *Pool) conn(ctx context.Context, fresh bool) (*upConn, error) {
	u.mu.Lock()
	if !fresh {
		for len(u.idle) > 0 {
			c := u.idle[len(u.idle)-1]
			u.idle = u.idle[:len(u.idle)-1]
			if time.Since(c.used) <= IdleTimeout {
				u.mu.Unlock()
				c.reused = true
				return c, nil
			}
			u.open--
			_ = c.nc.Close()
		}
	}
	if u.open >= u.us.maxConns {
		u.mu.Unlock()
		return nil, ErrFull
	}
	u.open++
	u.mu.Unlock()
	nc, err := u.us.dialer.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		u.mu.Lock()
		u.open--
		u.mu.Unlock()
		return nil, err
	}
	return &upConn{u: u, nc: nc, br: bufio.NewReaderSize(nc, upstreamBuffer)}, nil
}

// release returns a connection whose answer was read to its end to the
// pool, or closes it.
func (c *upConn) release(reuse bool) {
	u := c.u
	u.mu.Lock()
	if reuse && !u.us.closed.Load() {
		c.used = time.Now()
		u.idle = append(u.idle, c)
		u.mu.Unlock()
		return
	}
	u.open--
	u.mu.Unlock()
	_ = c.nc.Close()
}

// Header is one request header.
type Header struct{ Name, Value string }

// Post sends a POST of body to uri and returns the answer once its
// headers are read; its Body reads the rest on the caller's goroutine.
// The context bounds the whole exchange, the body's reading included: its
// end interrupts a blocked read at once. A request on a reused connection
// that the server had closed while idle (it fails before a byte of the
// answer) is sent again once on a new connection, as the server never
// saw it.
func (u *Pool) Post(ctx context.Context, uri string, body []byte, hdrs []Header) (*http.Response, error) {
	fresh := false
	for {
		c, err := u.conn(ctx, fresh)
		if err != nil {
			return nil, err
		}
		resp, retry, err := c.roundTrip(ctx, uri, body, hdrs)
		if err == nil {
			return resp, nil
		}
		if retry && c.reused && ctx.Err() == nil {
			fresh = true
			continue
		}
		return nil, err
	}
}

// roundTrip writes the request and reads the answer's head. retry says
// the request failed before any answer arrived.
func (c *upConn) roundTrip(ctx context.Context, uri string, body []byte, hdrs []Header) (resp *http.Response, retry bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error, retry bool) (*http.Response, bool, error) {
		stop()
		c.release(false)
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, retry, err
	}
	head := make([]byte, 0, 256)
	head = append(head, "POST "...)
	head = append(head, uri...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, c.u.host...)
	head = append(head, "\r\nUser-Agent: warden\r\nContent-Type: application/json\r\nContent-Length: "...)
	head = strconv.AppendInt(head, int64(len(body)), 10)
	for _, h := range hdrs {
		head = append(head, "\r\n"...)
		head = append(head, h.Name...)
		head = append(head, ": "...)
		head = append(head, h.Value...)
	}
	head = append(head, "\r\n\r\n"...)
	bufs := net.Buffers{head, body}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return fail(err, true)
	}
	resp, err = c.readHead(ctx, stop)
	if err != nil {
		return fail(err, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
	}
	return resp, false, nil
}

// readHead reads the status line and headers (skipping 1xx answers) and
// sets up the body's reader.
func (c *upConn) readHead(ctx context.Context, stop func() bool) (*http.Response, error) {
	for {
		line, err := c.line()
		if err != nil {
			return nil, err
		}
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return nil, fmt.Errorf("malformed HTTP status line %q", line[:min(len(line), 64)])
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return nil, fmt.Errorf("malformed HTTP status line %q", line[:min(len(line), 64)])
		}
		resp := &http.Response{StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, ContentLength: -1}
		chunked, closing := false, line[7] == '0'
		size := 0
		for {
			line, err := c.line()
			if err != nil {
				return nil, err
			}
			if size += len(line); size > maxHeaderBytes {
				return nil, errors.New("the answer's headers are too large")
			}
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				continue
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "content-length"):
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("malformed Content-Length %q", value)
				}
				resp.ContentLength = n
			case asciiEqualFold(name, "transfer-encoding"):
				chunked = asciiEqualFold(value, "chunked")
			case asciiEqualFold(name, "connection"):
				closing = closing || asciiEqualFold(value, "close")
			case asciiEqualFold(name, "content-type"):
				resp.Header["Content-Type"] = []string{string(value)}
			case asciiEqualFold(name, "retry-after"):
				resp.Header["Retry-After"] = []string{string(value)}
			}
		}
		if status < 200 && status != http.StatusSwitchingProtocols {
			continue
		}
		b := &upBody{c: c, ctx: ctx, stop: stop, keep: !closing, left: -1}
		switch {
		case status == http.StatusNoContent || status == http.StatusNotModified:
			b.left = 0
		case chunked:
			resp.ContentLength = -1
			b.chunked = httputil.NewChunkedReader(c.br)
		case resp.ContentLength >= 0:
			b.left = resp.ContentLength
		default:
			// Read until the server closes the connection.
			b.left, b.keep = -1, false
		}
		resp.Body = b
		if b.left == 0 {
			b.done()
		}
		return resp, nil
	}
}

// line reads one header line without its line end.
func (c *upConn) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("an answer's header line is too long")
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x := b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != s[i] {
			return false
		}
	}
	return true
}

// upBody reads an answer's body from its connection and hands the
// connection back once the body is read to its end.
type upBody struct {
	c   *upConn
	ctx context.Context
	// stop unregisters the context's interruption (detach calls it).
	stop func() bool
	// detached says stop was called, live that it found the context's
	// interruption not yet fired.
	detached, live bool
	// deadline says CloseSoon set a read deadline on the connection.
	deadline bool
	// left is what remains of a Content-Length body; -1 until the
	// connection closes (or for a chunked body).
	left    int64
	chunked io.Reader
	keep    bool
	// finished says the connection was released.
	finished bool
	err      error
}

func (b *upBody) Read(p []byte) (int, error) {
	if b.finished {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	var n int
	var err error
	switch {
	case b.chunked != nil:
		n, err = b.chunked.Read(p)
		if errors.Is(err, io.EOF) {
			// The trailer section, up to its empty line.
			for {
				line, lerr := b.c.line()
				if lerr != nil {
					b.keep = false
					break
				}
				if len(line) == 0 {
					break
				}
			}
			b.done()
			return n, io.EOF
		}
	case b.left >= 0:
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err = b.c.br.Read(p)
		b.left -= int64(n)
		if b.left == 0 {
			b.done()
			return n, io.EOF
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	default:
		n, err = b.c.br.Read(p)
		if errors.Is(err, io.EOF) {
			b.done()
			return n, io.EOF
		}
	}
	if err != nil {
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.keep = false
		b.err = err
		b.done()
	}
	return n, err
}

// done releases the connection: to the pool when the body was read to its
// end and the context never interrupted it.
func (b *upBody) done() {
	if b.finished {
		return
	}
	b.finished = true
	reuse := b.detach() && b.keep && b.err == nil
	if reuse && b.deadline {
		reuse = b.c.nc.SetReadDeadline(time.Time{}) == nil
	}
	b.c.release(reuse)
}

// detach unregisters the context's interruption once and reports whether
// it had not fired: a connection it interrupted is not reused.
func (b *upBody) detach() bool {
	if !b.detached {
		b.detached, b.live = true, b.stop()
	}
	return b.live
}

// CloseSoon closes an answer's body like Close, but lets the server end
// it first: the rest of a body whose caller read what it needed (the one
// event of a server-sent event stream that its server ends right after) is
// read in the background, at most limit bytes for at most wait, so that its
// connection serves a later request instead of being closed. The caller's
// context no longer interrupts it. A body of another client is closed at
// once.
func CloseSoon(body io.ReadCloser, wait time.Duration, limit int64) {
	b, ok := body.(*upBody)
	if !ok || b.finished {
		_ = body.Close()
		return
	}
	if !b.detach() || b.c.nc.SetReadDeadline(time.Now().Add(wait)) != nil {
		_ = b.Close()
		return
	}
	b.deadline = true
	go func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(b, limit))
		_ = b.Close()
	}()
}

// Close releases the connection; one whose body was not read to its end
// is closed.
func (b *upBody) Close() error {
	if !b.finished {
		b.keep = false
		b.done()
	}
	return nil
}
